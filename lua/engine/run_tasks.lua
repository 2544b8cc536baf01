#!lua
--[[ run_tasks: move scheduled, retrying or dead tasks to the tail of the
  pending list now.
  KEYS[1] T:scheduled  KEYS[2] T:retry  KEYS[3] T:dead  KEYS[4] T:msg
  KEYS[5] T:state  KEYS[6] T:first  KEYS[7] T:last  KEYS[8] T:feed
  KEYS[9] T:feed:msg
  KEYS[10] T:guard, which never exists (keys.Partition.Guard): declared so that
    Redis refuses this script while its slot migrates, as it reaches shards
  ARGV[1] T:s:  ARGV[2] shard size
  ARGV[3..] pairs: task ID, its MaxRetry (from its message)
  A task that never ran loses its record, as in forward; one that ran keeps
  it, with its attempts and last error. A dead task gets one more attempt:
  its attempts, which count every start, stay as they are, and the record
  grants it the attempts it took beyond MaxRetry+1 (include/record.lua,
  field 12), so that the next start is its last. A task still in
  the recent feed gets its message back in T:feed:msg, where inspectors
  find pending tasks.
  Returns: one code per task: 1 moved, 0 not scheduled, retrying or dead ]]
--@include sharded
--@include record
--@include taskset
--@include fair
local sets = {KEYS[1], KEYS[2], KEYS[3]}
local msgs, codes = {}, {}
for i = 3, #ARGV, 2 do
  local id, max_retry = ARGV[i], tonumber(ARGV[i + 1])
  local which, key = task_set(sets, id)
  local m = which and redis.call('HGET', KEYS[4], id)
  if which then redis.call('ZREM', key, id) end
  if m then
    msgs[#msgs + 1] = m
    redis.call('HDEL', KEYS[4], id)
    if redis.call('ZSCORE', KEYS[8], id) then redis.call('HSET', KEYS[9], id, m) end
    local r = record_get(KEYS[5], id)
    if r[2] == 0 then
      redis.call('HDEL', KEYS[5], id)
    else
      if which == 3 and r[2] - (r[12] or 0) > max_retry then
        r[11], r[12] = r[11] or '', r[2] - max_retry
      end
      r[1], r[4], r[8], r[9] = 'pending', '', 0, 0
      record_put(KEYS[5], id, r)
    end
  end
  codes[#codes + 1] = m and 1 or 0
end
-- a task with a key goes back to its key's tasks (include/fair.lua)
msgs = fair_route(string.sub(ARGV[1], 1, -4), msgs, false, tonumber(ARGV[2]))
if #msgs > 0 then sharded_push(KEYS[6], KEYS[7], ARGV[1], tonumber(ARGV[2]), msgs, false) end
return codes
