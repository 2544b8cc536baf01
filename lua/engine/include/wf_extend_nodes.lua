-- wf_extend_nodes reads an extension's nodes from ARGV[10..], five values
-- each (see workflow_add.lua), as {name, meta, e, parents, before}; a
-- workflow released through the outbox (direct false) stores the
-- delivery made of a producer's route and message. It returns nil, the
-- nodes and the set of their names; or the reply: FLOW_NAME_TAKEN for a
-- name given twice, a join node's or one of W's, or FLOW_CREATED for a
-- repeat whose nodes all exist (a fan-out handler retried).
local function wf_extend_nodes(W, direct, joins)
  local wf = wf_lib()
  local NONE = {} -- no edges: an empty list, shared, never written to
  local nodes, new, taken = {}, {}, nil
  for i = 10, #ARGV, 5 do
    local nd = {name = ARGV[i], meta = ARGV[i + 1], e = ARGV[i + 2], parents = NONE, before = NONE}
    if not direct then
      local m = cmsgpack.unpack(nd.meta)
      if m[7] then nd.e = wf.delivery(m, select(4, wf.split(nd.e)) or nd.e) end
    end
    if ARGV[i + 3] ~= '' then nd.parents = cmsgpack.unpack(ARGV[i + 3]) end
    if ARGV[i + 4] ~= '' then nd.before = cmsgpack.unpack(ARGV[i + 4]) end
    if new[nd.name] or joins[nd.name] then return {FLOW_NAME_TAKEN, nd.name} end
    if redis.call('HEXISTS', W, 's:' .. nd.name) == 1 then taken = taken or nd.name end
    new[nd.name] = true
    nodes[#nodes + 1] = nd
  end
  if taken then
    for _, nd in ipairs(nodes) do
      if redis.call('HEXISTS', W, 's:' .. nd.name) == 0 then return {FLOW_NAME_TAKEN, taken} end
    end
    return {FLOW_CREATED}
  end
  return nil, nodes, new
end
