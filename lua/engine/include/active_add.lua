-- active_add adds leases {deadline, id, ...} to the active set A. A new
-- set is made a skiplist: its first member is longer than 64 bytes,
-- zset-max-listpack-value's default, and leaves in the same call. As a
-- listpack, below 128 members, the set is a list that every lease's insert
-- scans to its end, its deadline being the highest score, and that every
-- ack's removal scans too: a worker with a few dozen tasks in flight spent
-- a tenth of Redis's CPU per task there. Redis 7 keeps a skiplist one as
-- members leave; the set is made again once it empties.
local function active_add(A, leases)
  if redis.call('EXISTS', A) == 1 then
    redis.call('ZADD', A, unpack(leases))
    return
  end
  local pad = string.rep('-', 65)
  redis.call('ZADD', A, 0, pad, unpack(leases))
  redis.call('ZREM', A, pad)
end
