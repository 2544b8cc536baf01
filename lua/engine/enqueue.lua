#!lua
--[[ enqueue: add a batch of tasks to one queue partition T.
  KEYS[1] T:first  KEYS[2] T:last  KEYS[3] T:feed  KEYS[4] T:feed:rank
  KEYS[5] T:feed:msg  KEYS[6] T:scheduled  KEYS[7] T:msg  KEYS[8] T:state
  KEYS[9] T:guard, which never exists (keys.Partition.Guard): declared so that
    Redis refuses this script while its slot migrates, as it reaches shards
  ARGV[1] T, the partition's key prefix (for T:s:<n>, T:unique:<key>,
    T:ids:<bucket>:<shard>: include/idclaim.lua)
  ARGV[2] now (ms, "" = server time)  ARGV[3] shard size  ARGV[4] feed cap
  ARGV[5] fields per task: 2 when every task is plain (pending now, generated
    id, not unique), else 7
  ARGV[6..] per task: message, id, and with 7 fields: due at (ms, 0 = now),
    due in (ms, 0 = now), unique key ("" = none), unique ttl (ms; < 0: until
    the task finishes, then -ttl - 1 ms: include/unique.lua), id claim
    ttl (ms, 0 = generated id: no claim)
  Returns: one code per task (include/codes.lua): ENQ_PENDING, ENQ_SCHEDULED,
  ENQ_DUPLICATE_ID, ENQ_DUPLICATE_UNIQUE, or ENQ_CLOSED: the partition is
  closed (include/closed.lua: its queue's partition count was lowered and
  it drains; every task gets ENQ_CLOSED and nothing
  is written). Every check runs before the first write, so a rejected task
  changes nothing and the others are enqueued. ]]
-- Only what the plain path needs is included before it: every definition
-- is a statement run at each call, so the checked path's own (time,
-- record) come after the plain path has returned.
--@include codes
--@include closed
--@include msgpack_short_head
--@include pending
local T = ARGV[1]
local size, cap = tonumber(ARGV[3]), tonumber(ARGV[4])
local F, FIRST = tonumber(ARGV[5]), 6

-- a draining partition takes nothing new: the producer routes again
if rank_closed(redis.call('GET', KEYS[4])) then
  local codes = {}
  for _ = FIRST, #ARGV, F do codes[#codes + 1] = ENQ_CLOSED end
  return codes
end

if F == 2 then
  -- plain tasks: nothing to check, nothing scheduled; the common case
  -- skips the per-task options entirely. A task with a group
  -- keeps a copy: it waits in its key's list, away from the shards. One
  -- task onto a backlog: GET, RPUSH, INCRBY, ZADD.
  local codes, plain, members, copies, keyed, at = {}, {}, {}, {}, {}, {}
  for i = FIRST, #ARGV, 2 do
    codes[#codes + 1] = ENQ_PENDING
    members[#members + 1] = ARGV[i + 1]
    if not msgpack_short_head(ARGV[i]) and msg_keyed(ARGV[i]) then -- a plain head: one call, not two
      keyed[#keyed + 1] = ARGV[i]
      copies[#copies + 1] = ARGV[i + 1]
      copies[#copies + 1] = ARGV[i]
    else
      plain[#plain + 1] = ARGV[i]
      at[#at + 1] = #members -- its feed position, for the pending index
    end
  end
  pending_store(T, size, cap, keyed, plain, at, members, copies)
  return codes
end

--@include time
--@include record
--@include unique
--@include idclaim

local now = now_ms(ARGV[2])

-- checks: no writes yet
local codes, seen_id, seen_unique, shards = {}, {}, {}, {}
local buckets = {} -- claim bucket names per IDTTL, built once a call
for i = FIRST, #ARGV, F do
  local id, unique, claim = ARGV[i + 1], ARGV[i + 4], tonumber(ARGV[i + 6])
  local code, held = ENQ_PENDING, false
  if claim > 0 and not seen_id[id] then
    held, shards[#codes + 1] = claim_held(T, id, claim, now, buckets)
  end
  if claim > 0 and (seen_id[id] or held or redis.call('HEXISTS', KEYS[8], id) == 1) then
    code = ENQ_DUPLICATE_ID
  elseif unique ~= '' and (seen_unique[unique] or redis.call('EXISTS', T .. ':unique:' .. unique) == 1) then
    code = ENQ_DUPLICATE_UNIQUE
  end
  if code == ENQ_PENDING then
    if claim > 0 then seen_id[id] = true end
    if unique ~= '' then seen_unique[unique] = true end
  end
  codes[#codes + 1] = code
end

-- writes
local keyed, plain, at, members, copies, expiries = {}, {}, {}, {}, {}, {}
for i = FIRST, #ARGV, F do
  local k = (i - FIRST) / F + 1
  if codes[k] == ENQ_PENDING then
    local msg, id = ARGV[i], ARGV[i + 1]
    local due_at, delay = tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
    local unique, unique_ttl, claim = ARGV[i + 4], tonumber(ARGV[i + 5]), tonumber(ARGV[i + 6])
    local due = 0
    if due_at > 0 then due = due_at elseif delay > 0 then due = now + delay end
    members[#members + 1] = id
    if due > now then
      redis.call('ZADD', KEYS[6], due, id)
      redis.call('HSET', KEYS[7], id, msg)
      redis.call('HSET', KEYS[8], id, record_new('scheduled', due))
      codes[k] = ENQ_SCHEDULED
      copies[#copies + 1], copies[#copies + 2] = id, msg
    elseif not msgpack_short_head(msg) and msg_keyed(msg) then
      keyed[#keyed + 1] = msg
      copies[#copies + 1], copies[#copies + 2] = id, msg
    else
      plain[#plain + 1], at[#at + 1] = msg, #members
    end
    if claim > 0 then claim_take(T, id, shards[k], claim, now, expiries, buckets) end
    if unique ~= '' then unique_take(T, unique, id, unique_ttl) end
  end
end
pending_store(T, size, cap, keyed, plain, at, members, copies)
return codes
