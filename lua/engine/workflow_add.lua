#!lua
--[[ workflow_add: create workflow wid at its home H, or extend a running
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
    A batch's shape (queue/batch.go) adds: ARGV[13] its join nodes, as a
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
--@include wf_open_to
--@include wf_taskless
--@include wf_create
--@include wf_extend_nodes
--@include wf_extend_edges
--@include wf_cycle
--@include wf_extend_write
local wf = wf_lib()
local W, H = KEYS[1], ARGV[1]
local now = now_ms(ARGV[2])
local mode = ARGV[6]
local max = tonumber(ARGV[7])

-- finish releases the nodes run r queued, writes its changes, and
-- returns the reply: the IDs of the nodes put into the outbox
local function finish(r)
  wf.run(r, now + tonumber(ARGV[5]))
  wf.check(W, now, wf.flush(r))
  local out = r.released
  table.insert(out, 1, FLOW_CREATED)
  return out
end

if mode == 'note' then
  local x = ARGV[10]
  local f = redis.call('HMGET', W, 'state', 'm:' .. x)
  if not f[1] then return {FLOW_NOT_FOUND} end
  if f[2] ~= wf_taskless() then return {FLOW_UNKNOWN_PARENT, x, x} end
  local r = wf.start(H, W, now)
  wf.note(r, x, '', 's', '', '')
  return finish(r)
end
if mode ~= 'extend' and mode ~= 'extend in' then
  local refused, r = wf_create(W, H, now, max)
  if refused then return refused end
  return finish(r)
end

-- an extension: everything is checked before the first write
local f = redis.call('HMGET', W, 'state', 'finished', 'n', 'max', 'gate', 'join', 'edges', 'dr')
local refused, join = wf_open_to(W, f, mode == 'extend in')
if refused then return refused end
local joins = {}
for x in string.gmatch(join or '', '%S(%S+)') do joins[x] = true end
local reply, nodes, new = wf_extend_nodes(W, (f[8] or '') ~= '', joins)
if reply then return reply end
local r = wf.start(H, W, now)
local adds, edges, before
reply, adds, edges, before = wf_extend_edges(r, nodes, new)
if reply then return reply end
local n, e = tonumber(f[3]) + #nodes, tonumber(f[7]) + edges
if n > (tonumber(f[4]) or max) or e > tonumber(ARGV[8]) then return {FLOW_TOO_BIG, n, e} end
local stored = {} -- existing nodes' children lists, read once
reply = wf_cycle(W, nodes, new, adds, stored)
if reply then return reply end
wf_extend_write(W, r, nodes, new, adds, edges, before, stored, join)
return finish(r)
