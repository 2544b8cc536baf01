--@include ack_lib
--@include ack_wf
--@include ack_write
-- ack_tasks finishes the tasks of partition T that succeeded, given in
-- argv from index from on: the number of fields per task, 2, 3, 4, 5 or
-- 7, then the tasks: id, token and, with 4, retention (ms, 0 = not kept) and
-- unique key ("" = none), with 5 the task's flow ref ("" = none: see
-- wire.FlowRef), and with 7 its workflow's key and its node's name when
-- this script may write there ("" = it may not); 2 stands for retention
-- 0, no unique key and no flow, the common case, in half the arguments;
-- 3 stands for nodes of one workflow, with retention 0 and no unique key,
-- and has that workflow's key before the tasks, then per task its id,
-- token and node's name.
-- A flow task's success is appended to T:notify (wire.FlowNote, with a
-- chain link's result), atomically with its ack; workers forward it to
-- the flow's home (home_notify.lua). A workflow node's success with its
-- workflow's key given is applied there in this script instead: on one
-- Redis server, the nodes it frees are enqueued with its ack
-- (include/wf_acked.lua).
-- A task is finished only under the token of its current lease: a stale
-- token (the lease was lost and the task handed to another worker)
-- changes nothing. Tasks with a retention stay in the
-- done feed until it passes (or the feed's cap trims them); the others
-- leave no record. It returns one code per task: 1 acked, 0 stale token or
-- already finished. ack runs it alone; pop and claim run it first, so a
-- busy worker's acks ride in its next dequeue.
--
-- A plain ack (width 2) forgets its tasks here, and one of nodes of one
-- workflow (width 3) records them with ack_wf's nodes; any other goes
-- through the helpers of ack_lib. They share the call's state a: T, now,
-- argv, width, the workflow key wkey, done (the IDs acked, nd of them)
-- and what ack_task records per task.
local function ack_tasks(T, now, argv, from, cap, size)
  local codes, ids, n = {}, {}, 0
  local width = tonumber(argv[from])
  if not width then return codes end
  -- width 3: the workflow key, once, then per task its ID, token and node
  local first, wkey = from + 1, ''
  if width == 3 then first, wkey = from + 2, argv[from + 1] end
  for i = first, #argv, width do
    n = n + 1
    ids[n] = argv[i]
  end
  if n == 0 then return codes end
  local raws = redis.call('HMGET', T .. ':state', unpack(ids))
  -- the tasks of one pop share a record, byte for byte: unpack it once
  local unpacked = {}
  local a = {done = {}, nu = 0} -- a plain ack's: what it acked alone
  local task = width ~= 2 and width ~= 3 and ack_lib().task
  -- nodes of workflow wkey: their names, in the order of done
  local xs = width == 3 and {}
  if task then
    a = {T = T, now = now, argv = argv, width = width, wkey = wkey, done = {}, nd = 0, uniques = {}, nu = 0}
  elseif xs then
    a = {T = T, now = now, done = {}, nu = 0}
  end
  local done, nd, released = a.done, 0, nil
  for k = 1, n do
    local raw, code = raws[k], 0
    local r = raw and (unpacked[raw] or cmsgpack.unpack(raw))
    if r then
      unpacked[raw] = r
      local i = first + width * (k - 1)
      if r[1] == 'active' and r[3] == tonumber(argv[i + 1]) then
        code = 1
        if task then
          task(a, ids[k], r, raw, i)
        else
          nd = nd + 1
          done[nd] = ids[k]
          if r[10] and r[10] ~= '' then
            released = released or {}
            released[r[10]] = (released[r[10]] or 0) + 1
          end
          if xs then xs[nd] = argv[i + 2] end
        end
      end
    end
    codes[k] = code
  end
  if task then nd, released = a.nd, a.released end
  if nd == 0 then return codes end
  -- one call for them all, not one per node
  if xs then ack_wf().nodes(a, wkey, xs, done, nd) end
  ack_write(T, now, a, done, nd, released, cap, size)
  return codes
end
