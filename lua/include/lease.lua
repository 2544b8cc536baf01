--@include limits
-- lease_tasks leases each message until deadline: its record becomes
-- active with one more attempt, a new fencing token and its concurrency
-- key; its message moves to T:msg, its ID to T:active, its key's running
-- count goes up, and a rate-limited partition logs the start. It returns
-- {id, message, attempt, token, ...}.
local function lease_tasks(T, msgs, now, deadline, worker)
  local out = {}
  local active, msgk, statek = T .. ':active', T .. ':msg', T .. ':state'
  local _, rate = limits_get(T)
  for _, m in ipairs(msgs) do
    local id, key = msg_head(m)
    local r = record_get(statek, id)
    r[1], r[2], r[3], r[4], r[7], r[9], r[10] = 'active', r[2] + 1, r[3] + 1, worker, now, 0, key
    record_put(statek, id, r)
    redis.call('HSET', msgk, id, m)
    redis.call('ZADD', active, deadline, id)
    if key ~= '' then redis.call('HINCRBY', T .. ':keyactive', key, 1) end
    if rate > 0 then redis.call('ZADD', T .. ':ratelog', now, id .. ':' .. r[3]) end
    out[#out + 1] = id
    out[#out + 1] = m
    out[#out + 1] = r[2]
    out[#out + 1] = r[3]
  end
  return out
end
