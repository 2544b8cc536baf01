#!lua
--[[ flow_workflow: create workflow wid at its home H, or extend a running
  one with new nodes, atomically: the nodes are checked first (names new,
  parents known, the size within bounds), and nothing is written when one
  is refused. Nodes whose parents allow it go into the outbox at once
  (the caller delivers them; sweepers do after the grace).
  KEYS[1] H:w:<wid>
  ARGV[1] H  ARGV[2] now (ms, "" = server time)  ARGV[3] workflow ID
  ARGV[4] retention after it finished (ms, 0 = forever)  ARGV[5] grace (ms)
  ARGV[6] "new" or "extend"  ARGV[7] max nodes  ARGV[8] max edges
  ARGV[9..] per node: name, {task ID, queue, type} (msgpack), delivery,
    parents {{name, edge}, ...} (msgpack; edge 'f', 'r' or 'k')
  Returns: {FLOW_CREATED, released task ID, ...}, or {code, detail...}:
  FLOW_ID_TAKEN, FLOW_NOT_FOUND, FLOW_FINISHED, FLOW_CLOSED (cancelled),
  FLOW_NAME_TAKEN {name}, FLOW_UNKNOWN_PARENT {node, parent},
  FLOW_TOO_BIG {nodes, edges} (include/codes.lua) ]]
--@include codes
--@include time
--@include flowhome
local W, H, wid = KEYS[1], ARGV[1], ARGV[3]
local now = now_ms(ARGV[2])
local extend = ARGV[6] == 'extend'
local n0, e0 = 0, 0
if extend then
  local f = redis.call('HMGET', W, 'state', 'finished', 'n', 'edges')
  if not f[1] then return {FLOW_NOT_FOUND} end
  if f[1] == 'cancelled' then return {FLOW_CLOSED} end
  if f[2] ~= '0' then return {FLOW_FINISHED} end
  n0, e0 = tonumber(f[3]), tonumber(f[4])
elseif redis.call('EXISTS', W) == 1 then
  return {FLOW_ID_TAKEN}
end

-- check everything before the first write
local nodes, new = {}, {}
for i = 9, #ARGV, 4 do
  local nd = {name = ARGV[i], meta = ARGV[i + 1], e = ARGV[i + 2], parents = cmsgpack.unpack(ARGV[i + 3])}
  if new[nd.name] or redis.call('HEXISTS', W, 's:' .. nd.name) == 1 then return {FLOW_NAME_TAKEN, nd.name} end
  new[nd.name] = true
  nodes[#nodes + 1] = nd
end
local edges = 0
for _, nd in ipairs(nodes) do
  for _, pe in ipairs(nd.parents) do
    if not new[pe[1]] and redis.call('HEXISTS', W, 's:' .. pe[1]) == 0 then
      return {FLOW_UNKNOWN_PARENT, nd.name, pe[1]}
    end
    edges = edges + 1
  end
end
if n0 + #nodes > tonumber(ARGV[7]) or e0 + edges > tonumber(ARGV[8]) then
  return {FLOW_TOO_BIG, n0 + #nodes, e0 + edges}
end

if not extend then
  redis.call('HSET', W, 'state', 'running', 'n', 0, 'edges', 0, 'open', 0, 'bad', 0,
    'why', '', 'created', now, 'finished', 0, 'ret', ARGV[4])
  flow_recent(H, 'w:' .. wid, now)
end
redis.call('HINCRBY', W, 'n', #nodes)
redis.call('HINCRBY', W, 'edges', edges)
redis.call('HINCRBY', W, 'open', #nodes)
for _, nd in ipairs(nodes) do
  redis.call('HSET', W, 'm:' .. nd.name, nd.meta, 's:' .. nd.name, 'w', 'e:' .. nd.name, nd.e)
end
-- children lists, then each new node's counters from its parents' states
local children, order = {}, {}
for _, nd in ipairs(nodes) do
  local c = {0, 0, 0}
  for _, pe in ipairs(nd.parents) do
    local p = pe[1]
    if not children[p] then
      local cs = redis.call('HGET', W, 'c:' .. p)
      children[p] = cs and cmsgpack.unpack(cs) or {}
      order[#order + 1] = p
    end
    local list = children[p]
    list[#list + 1] = {nd.name, pe[2]}
    wf_count(c, wf_effect(redis.call('HGET', W, 's:' .. p), pe[2]), 1)
  end
  redis.call('HSET', W, 'u:' .. nd.name, c[1] .. ' ' .. c[2] .. ' ' .. c[3])
end
for _, p in ipairs(order) do
  redis.call('HSET', W, 'c:' .. p, cmsgpack.pack(children[p]))
end
local work = {}
for _, nd in ipairs(nodes) do work[#work + 1] = nd.name end
local released = wf_run(H, W, work, now + tonumber(ARGV[5]))
wf_check(W, now)
table.insert(released, 1, FLOW_CREATED)
return released
