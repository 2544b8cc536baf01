--@include unique_release
--@include record_forget
--@include keys_release
--@include stats_add
--@include ack_lib
--@include ack_wf
-- ack_write writes what ack_tasks acked on partition T: done holds the nd
-- IDs acked, released their groups' counts (nil: none), and a the rest
-- the helpers recorded (ack_lib); kept tasks go to the done feed of cap
-- members, and size is the shard size the groups' lists take.
local function ack_write(T, now, a, done, nd, released, cap, size)
  local statek, msgk = T .. ':state', T .. ':msg'
  -- The workflows first: reading a workflow's hash is the one part of an
  -- ack that can fail on what it reads (a bad field), and it fails
  -- before its own writes (include/wf_acked.lua), so a failed call has
  -- written nothing of the acks' own. The worker then acks the batch's
  -- tasks one by one, and the task whose ack still fails goes dead
  -- (internal/serve/outcome.go).
  if a.nodes then ack_wf().workflows(a) end
  if released then keys_release(T, released, size) end
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
  if a.kept then ack_lib().keep_write(a, cap) end
  stats_add(T, 'done', now, nd)
end
