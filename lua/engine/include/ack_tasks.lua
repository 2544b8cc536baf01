--@include unique_release
--@include record_forget
--@include keys_release
--@include stats_add
--@include ack_task
--@include ack_workflows
--@include ack_keep_write
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
-- the flow's home (flow_notify.lua). A workflow node's success with its
-- workflow's key given is applied there in this script instead: on one
-- Redis server, the nodes it frees are enqueued with its ack
-- (include/workflow.lua).
-- A task is finished only under the token of its current lease: a stale
-- token (the lease was lost and the task handed to another worker)
-- changes nothing. Tasks with a retention stay in the
-- done feed until it passes (or the feed's cap trims them); the others
-- leave no record. It returns one code per task: 1 acked, 0 stale token or
-- already finished. ack runs it alone; pop and claim run it first, so a
-- busy worker's acks ride in its next dequeue.
--
-- Its helpers share the call's state a: T, now, argv, width, the workflow
-- key wkey of width 3, done (the IDs acked, nd of them) and what ack_task
-- records per task.
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
  local statek, msgk = T .. ':state', T .. ':msg'
  local raws = redis.call('HMGET', statek, unpack(ids))
  -- the tasks of one pop share a record, byte for byte: unpack it once
  local unpacked = {}
  local a = {T = T, now = now, argv = argv, width = width, wkey = wkey, done = {}, nd = 0, uniques = {}, nu = 0}
  for k = 1, n do
    local raw, code = raws[k], 0
    if raw then
      local r = unpacked[raw]
      if not r then
        r = cmsgpack.unpack(raw)
        unpacked[raw] = r
      end
      local i = first + width * (k - 1)
      if r[1] == 'active' and r[3] == tonumber(argv[i + 1]) then
        code = 1
        ack_task(a, ids[k], r, raw, i)
      end
    end
    codes[k] = code
  end
  local done, nd = a.done, a.nd
  if nd == 0 then return codes end
  -- The workflows first: reading a workflow's hash is the one part of an
  -- ack that can fail on what it reads (a bad field), and it fails
  -- before its own writes (include/workflow.lua), so a failed call has
  -- written nothing of the acks' own. The worker then acks the batch's
  -- tasks one by one, and the task whose ack still fails goes dead
  -- (worker/outcome.go).
  if a.nodes then ack_workflows(a) end
  if a.released then keys_release(T, a.released, size) end
  if a.notes then redis.call('RPUSH', T .. ':notify', unpack(a.notes)) end
  for k = 1, a.nu, 2 do unique_release(T, a.uniques[k], a.uniques[k + 1], 'done') end
  local gone = a.gone or done -- none kept: every acked task is gone
  redis.call('ZREM', T .. ':active', unpack(done))
  redis.call('HDEL', T .. ':feed:msg', unpack(done))
  if #gone > 0 then
    redis.call('HDEL', msgk, unpack(gone))
    redis.call('HDEL', statek, unpack(gone))
    -- a handler's progress, result and steps go with the task (kept ones
    -- stay until its retention ends: reap, delete_tasks)
    record_forget(T, gone)
  end
  if a.kept then ack_keep_write(a, cap) end
  stats_add(T, 'done', now, nd)
  return codes
end
