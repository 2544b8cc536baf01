--@include wf_parse
--@include wf_settings
-- wf_acked applies the successes of run r's acked nodes, r.acked, the
-- k-th the task ids[r.at[k]] with result results[r.at[k]] (false:
-- none). Their states and children lists come in one call per 500
-- nodes, and an enqueued node, the common case, takes the steps of
-- wf_note inline, with no entry made twice nor call per node (the join
-- nodes, read once a run, stand in for wf_joined's call). Any other
-- node goes through wf_note, its outcome counted as wf_set counts it.
local function wf_acked(r, ids, results)
  local xs, at, nodes = r.acked, r.at, r.nodes
  local fan, ok, kv = r.fan, 0, r.kv
  local join, joins
  -- the names a node meets, looked up once
  local fstate, fkids, fresult = WF_FIELD.state, WF_FIELD.children, WF_FIELD.result
  local enqueued, succeeded = WF_STATE.enqueued, WF_STATE.succeeded
  local nk = #kv
  for i = 1, #xs, 500 do
    local last = math.min(i + 499, #xs)
    local fields, f = {}, 0
    for k = i, last do
      local x = xs[k]
      fields[f + 1], fields[f + 2] = fstate .. x, fkids .. x
      f = f + 2
    end
    -- the settings, read once a run, come with the first nodes: the
    -- workflow's values first, then the nodes' from the 6th on
    local v, o = r.cancelled == nil and wf_settings(r, fields), 5
    if not v then v, o = redis.call('HMGET', r.W, unpack(fields)), 0 end
    join, joins = r.join, r.joins
    for k = i, last do
      local j = 2 * (k - i) + 1
      local x, st, cs = xs[k], v[j + o], v[j + o + 1] or false
      local result = results[at[k]] or ''
      if st == enqueued and nodes[x] == nil then
        nodes[x] = SUCCEEDED
        kv[nk + 1], kv[nk + 2] = fields[j], succeeded
        nk = nk + 2
        ok = ok + 1
        if result ~= '' then
          kv[nk + 1], kv[nk + 2] = fresult .. x, result
          nk = nk + 2
        end
        if cs or (join and not joins[x]) then
          local nf = #fan
          fan[nf + 1], fan[nf + 2], fan[nf + 3], fan[nf + 4] = x, enqueued, succeeded, cs
        end
      else
        if nodes[x] == nil then
          local n = st and wf_parse(st, fields[j]) or false
          if n then n[5] = cs end
          nodes[x] = n
        end
        wf_more().note(r, x, ids[at[k]], WF_STATE.succeeded, result, '')
        nk = #kv -- note may add writes
      end
    end
  end
  r.ok = r.ok + ok
end
