--@include feed_append
--@include record_forget
-- ack_keep_write writes what the call a kept (ack_keep): the done
-- records, their expiries, and their IDs into the done feed, of cap
-- members; the tasks the feed trims go at once, record and all.
local function ack_keep_write(a, cap)
  local T = a.T
  local statek, msgk = T .. ':state', T .. ':msg'
  redis.call('HSET', statek, unpack(a.keptStates))
  redis.call('ZADD', T .. ':expire', unpack(a.expiries))
  local _, trimmed = feed_append(T .. ':done', T .. ':done:rank', a.kept, cap)
  for _, id in ipairs(trimmed) do
    redis.call('HDEL', msgk, id)
    redis.call('HDEL', statek, id)
    record_forget(T, {id})
    redis.call('ZREM', T .. ':expire', id)
  end
end
