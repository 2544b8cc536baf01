#!lua
--[[ flow_workflow: create workflow wid at its home H, or extend a running
  one with new nodes, atomically: the nodes are checked first (names new,
  parents known, the size within bounds, no cycle), and nothing is written
  when one is refused. An extension whose nodes all exist already is a
  repeat: it succeeds and writes nothing. A new node may also be made a
  parent of an existing node that still waits (queue.Before): that node
  then waits for it too. Nodes whose parents allow it go into the outbox at
  once: straight into their queues when the workflow is released that way
  (dr, include/wf_push.lua), else into the outbox (the caller delivers
  them; sweepers do after the grace).
  KEYS[1] H:w:<wid>  KEYS[2] H:w:<wid>:new: with "new", the nodes' fields,
    which the caller wrote in the same transaction
  ARGV[1] H  ARGV[2] now (ms, "" = server time)  ARGV[3] workflow ID (short)
  ARGV[4] retention after it finished (ms, 0 = forever)  ARGV[5] grace (ms)
  ARGV[6] "new", "extend", "extend in" (from a task of the workflow: a
    closed gate does not refuse it) or "note" (a taskless node succeeds:
    a batch's Close)  ARGV[7] max nodes  ARGV[8] max edges
  ARGV[9] "<shard size> <feed cap>": release nodes straight into their
    queues (one Redis server), or "": through the outbox (Redis Cluster);
    an extension keeps the workflow's way
  With "extend", ARGV[10..] per node: name, its record {task ID, queue,
    type, partition} (msgpack), its delivery, parents {{name, edge}, ...}
    and existing children {{name, edge}, ...} (msgpack, "" for none; edge
    'f', 'r' or 'k'). A producer on one server sends the record with the
    route, {..., partitions, at, in}, and the task's message instead of
    its delivery; a workflow released through the outbox (no dr) stores
    the delivery made of them.
  With "new", the graph as it is stored, checked by the producer (names,
  parents, bounds, cycles: a new graph names no node it lacks): ARGV[10]
    nodes  ARGV[11] edges  ARGV[12] the roots' names (msgpack); KEYS[2]
    holds per node m:, e:, s: (its count of parents) and c: when it has
    children (include/wf_names.lua), and becomes the workflow's hash. The
    fields reach Redis as a plain HSET: through the script's arguments each
    would be copied twice more, into Lua and out again.
    A batch's shape (queue/flows.go) adds: ARGV[13] its join nodes, as a
    children list ("ron-complete fon-success": every other node is their
    parent, with no field for it)  ARGV[14] its bound of nodes, for every
    extension  ARGV[15] its gate, a taskless node whose success (ARGV[6]
    "note") closes it to extensions from outside  ARGV[16] the parent
    workflow it is a node of ("" = none; a nested batch, in this home)
    ARGV[17] that node's name  ARGV[18] "1" when the caller is a task of
    the parent  ARGV[19] its description.
  With "note", ARGV[10] the taskless node that succeeds.
  Returns: {FLOW_CREATED, task ID put into the outbox, ...}, or {code, detail...}:
  FLOW_ID_TAKEN, FLOW_NOT_FOUND, FLOW_FINISHED, FLOW_CLOSED (cancelled),
  FLOW_NAME_TAKEN {name}, FLOW_UNKNOWN_PARENT {node, named node},
  FLOW_TOO_BIG {nodes, edges}, FLOW_NOT_WAITING {node, child},
  FLOW_CYCLE {node, child} (include/codes.lua) ]]
--@include codes
--@include time
--@include workflow
--@include flow_recent
local wf = wf_lib()
local wf_start, wf_node, wf_count, wf_effect, wf_dirty, wf_chunks = wf.start, wf.node, wf.count, wf.effect, wf.dirty, wf.chunks
local W, H, wid = KEYS[1], ARGV[1], ARGV[3]
local now = now_ms(ARGV[2])
local mode = ARGV[6]
local extend = mode == 'extend' or mode == 'extend in'
local n0, e0 = 0, 0
local direct -- an extended workflow's nodes go straight into their queues
local join, joins = false, {} -- the join nodes (include/wf_joined.lua)
local max = tonumber(ARGV[7])
local TASKLESS = cmsgpack.pack({'', '', '', 0}) -- a taskless node's route

-- open_to refuses an extension of workflow X, whose fields f are state,
-- finished, n, max, gate and join, from outside (inside false) once its
-- gate succeeded, and any once a join node no longer waits; else it
-- returns nil and X's join list.
local function open_to(X, f, inside)
  if not f[1] then return {FLOW_NOT_FOUND} end
  if f[1] == 'cancelled' then return {FLOW_CLOSED} end
  if f[2] ~= '0' then return {FLOW_FINISHED} end
  if f[5] and not inside and redis.call('HGET', X, 's:' .. f[5]) ~= 'p' then return {FLOW_CLOSED, f[5]} end
  for x in string.gmatch(f[6] or '', '%S(%S+)') do
    local st = wf.parse(redis.call('HGET', X, 's:' .. x) or 'x')[1]
    if st ~= 'w' and st ~= 'f' and st ~= 'k' then return {FLOW_NOT_WAITING, '', x} end
  end
  return nil, f[6] or false
end

-- join_add counts, in run r, n new parents of each join node of list
local function join_add(r, list, n)
  for x in string.gmatch(list, '%S(%S+)') do
    wf_count(wf_node(r, x), 'u', n)
    wf_dirty(r, x)
  end
end

-- nest records the new workflow as taskless node x of its parent P, at
-- once enqueued: the new workflow's end moves it (include/wf_up.lua),
-- and the parent's join nodes wait for it too. With check, it only
-- refuses what it would refuse, writing nothing.
local function nest(P, x, inside, check)
  local f = redis.call('HMGET', P, 'state', 'finished', 'n', 'max', 'gate', 'join')
  local refused, pjoin = open_to(P, f, inside)
  if refused then return refused end
  if tonumber(f[3]) + 1 > (tonumber(f[4]) or max) then return {FLOW_TOO_BIG, tonumber(f[3]) + 1, 0} end
  if redis.call('HEXISTS', P, 's:' .. x) == 1 then return {FLOW_NAME_TAKEN, x} end
  if check then return nil end
  local r = wf_start(H, P, now)
  redis.call('HSET', P, 'm:' .. x, TASKLESS)
  redis.call('HINCRBY', P, 'n', 1)
  r.nodes[x] = wf.parse('p')
  wf_dirty(r, x)
  r.open, r.counts.p = 1, 1
  if pjoin then join_add(r, pjoin, 1) end
  wf.flush(r)
  return nil
end

-- finish releases the nodes run r queued, writes its changes, and
-- returns the reply: the IDs of the nodes put into the outbox
local function finish(r)
  wf.run(r, now + tonumber(ARGV[5]))
  wf.flush(r)
  wf.check(W, now)
  local out = r.released
  table.insert(out, 1, FLOW_CREATED)
  return out
end

if mode == 'note' then
  local x = ARGV[10]
  local f = redis.call('HMGET', W, 'state', 'm:' .. x)
  if not f[1] then return {FLOW_NOT_FOUND} end
  if f[2] ~= TASKLESS then return {FLOW_UNKNOWN_PARENT, x, x} end
  local r = wf_start(H, W, now)
  wf.note(r, x, '', 's', '', '')
  return finish(r)
end
if extend then
  local f = redis.call('HMGET', W, 'state', 'finished', 'n', 'max', 'gate', 'join', 'edges', 'dr')
  local refused
  refused, join = open_to(W, f, mode == 'extend in')
  if refused then return refused end
  direct = (f[8] or '') ~= ''
  n0, e0 = tonumber(f[3]), tonumber(f[7])
  max = tonumber(f[4]) or max
  if join then
    for x in string.gmatch(join, '%S(%S+)') do joins[x] = true end
  end
elseif redis.call('EXISTS', W) == 1 then
  redis.call('DEL', KEYS[2])
  return {FLOW_ID_TAKEN}
else
  local parent = ARGV[16] or ''
  if parent ~= '' then
    local refused = nest(H .. ':w:' .. parent, ARGV[17], ARGV[18] == '1', true)
    if refused then
      redis.call('DEL', KEYS[2])
      return refused
    end
  end
  -- a new graph: its fields as they came, then its roots are released
  if redis.call('EXISTS', KEYS[2]) == 0 then
    return redis.error_reply('ERR workflow ' .. wid .. ': its nodes were not written before the script')
  end
  redis.call('RENAME', KEYS[2], W)
  redis.call('PERSIST', W) -- the fields' expiry, for a transaction that failed
  local n = ARGV[10]
  redis.call('HSET', W, 'state', 'running', 'n', n, 'edges', ARGV[11], 'open', n, 'bad', 0, 'cnt_w', n,
    'why', '', 'why_node', '', 'why_id', '', 'created', now, 'finished', 0, 'ret', ARGV[4])
  if ARGV[9] ~= '' then redis.call('HSET', W, 'dr', ARGV[9]) end
  local kind = 'w:'
  if (ARGV[15] or '') ~= '' then
    -- a batch's shape
    redis.call('HSET', W, 'max', ARGV[14], 'gate', ARGV[15], 'desc', ARGV[19])
    if ARGV[13] ~= '' then redis.call('HSET', W, 'join', ARGV[13]) end
    kind = 'b:'
  end
  if parent ~= '' then
    nest(H .. ':w:' .. parent, ARGV[17], true, false)
    redis.call('HSET', W, 'up', parent .. ' ' .. ARGV[17])
  end
  flow_recent(H, kind .. wid, now)
  local r = wf_start(H, W, now)
  r.work = cmsgpack.unpack(ARGV[12]) or {}
  return finish(r)
end

-- check everything before the first write
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
  if extend and redis.call('HEXISTS', W, 's:' .. nd.name) == 1 then taken = taken or nd.name end
  new[nd.name] = true
  nodes[#nodes + 1] = nd
end
if taken then
  -- every node there already: a repeat (a fan-out handler retried) is done
  for _, nd in ipairs(nodes) do
    if redis.call('HEXISTS', W, 's:' .. nd.name) == 0 then return {FLOW_NAME_TAKEN, taken} end
  end
  return {FLOW_CREATED}
end
local r = wf_start(H, W, now)
-- adds: the children this call gives each node, new or existing
local adds, edges, before = {}, 0, false
local function add(p, child, e, letter)
  local list = adds[p]
  if not list then
    list = {}
    adds[p] = list
  end
  -- the edge's letter in the children list: upper case when p is
  -- child's only parent (include/wf_names.lua)
  list[#list + 1] = {child, e, letter or e}
  edges = edges + 1
end
for _, nd in ipairs(nodes) do
  for _, pe in ipairs(nd.parents) do
    if not new[pe[1]] and not wf_node(r, pe[1]) then
      return {FLOW_UNKNOWN_PARENT, nd.name, pe[1]}
    end
    -- a node's only parent marks its edge in upper case (include/wf_names.lua)
    add(pe[1], nd.name, pe[2], #nd.parents == 1 and string.upper(pe[2]))
  end
  for _, ce in ipairs(nd.before) do
    local c = wf_node(r, ce[1])
    if not c then return {FLOW_UNKNOWN_PARENT, nd.name, ce[1]} end
    if c[1] ~= 'w' then return {FLOW_NOT_WAITING, nd.name, ce[1]} end
    add(nd.name, ce[1], ce[2])
    before = true
  end
end
if n0 + #nodes > max or e0 + edges > tonumber(ARGV[8]) then
  return {FLOW_TOO_BIG, n0 + #nodes, e0 + edges}
end
-- an edge into an existing node makes a cycle when that node reaches the
-- new parent: search below it, through the stored children and this
-- call's
local stored = {}
local function children_of(x)
  local out = {}
  if not new[x] then
    local cs = stored[x]
    if cs == nil then
      cs = redis.call('HGET', W, 'c:' .. x)
      cs = cs and wf.kids(cs) or false
      stored[x] = cs
    end
    for ch in string.gmatch(cs or '', '%S(%S+)') do out[#out + 1] = ch end
  end
  for _, ch in ipairs(adds[x] or {}) do out[#out + 1] = ch[1] end
  return out
end
for _, nd in ipairs(nodes) do
  for _, ce in ipairs(nd.before) do
    local seen, stack = {[ce[1]] = true}, {ce[1]}
    while #stack > 0 do
      local x = table.remove(stack)
      for _, c in ipairs(children_of(x)) do
        if c == nd.name then return {FLOW_CYCLE, nd.name, ce[1]} end
        if not seen[c] then
          seen[c] = true
          stack[#stack + 1] = c
        end
      end
    end
  end
end

redis.call('HINCRBY', W, 'n', #nodes)
-- an existing node has a new parent: an upper-case edge into it may lie
if before then redis.call('HSET', W, 'ext', 1) end
redis.call('HINCRBY', W, 'edges', edges)
r.open = #nodes
r.counts.w = #nodes
local kv = {}
for _, nd in ipairs(nodes) do
  kv[#kv + 1], kv[#kv + 2] = 'm:' .. nd.name, nd.meta
  kv[#kv + 1], kv[#kv + 2] = 'e:' .. nd.name, nd.e
  r.nodes[nd.name] = wf.parse('0')
end
wf_chunks('HSET', W, kv, 1000)
-- the join nodes wait for every new node too, with no edge stored
if join then join_add(r, join, #nodes) end
-- each child's counters from its new parents' states, then the children
-- lists
kv = {}
for p, list in pairs(adds) do
  local ps = wf_node(r, p)[1]
  for _, ch in ipairs(list) do
    wf_count(wf_node(r, ch[1]), wf_effect(ps, ch[2]), 1)
    wf_dirty(r, ch[1])
  end
  -- the spaced form (see include/wf_kids.lua): the stored list, then
  -- the new children
  local all = {}
  if not new[p] then
    local cs = stored[p]
    if cs == nil then
      cs = redis.call('HGET', W, 'c:' .. p)
      cs = cs and wf.kids(cs) or false
    end
    if cs then all[1] = cs end
  end
  for _, ch in ipairs(list) do all[#all + 1] = ch[3] .. ch[1] end
  local packed = table.concat(all, ' ')
  kv[#kv + 1], kv[#kv + 2] = 'c:' .. p, packed
  r.nodes[p][5] = packed
end
wf_chunks('HSET', W, kv, 1000)
for _, nd in ipairs(nodes) do
  local n = r.nodes[nd.name]
  if n[5] == nil then n[5] = false end -- no children yet, none to read
  wf_dirty(r, nd.name)
  r.work[#r.work + 1] = nd.name
end
return finish(r)
