--@include sharded_push
--@include record_get
--@include record_put
--@include key_release
--@include fair
-- requeue_expired gives up to max tasks whose lease expired back to the
-- head of the pending list (their attempt stays counted) and returns how
-- many.
local function requeue_expired(T, now, max, size)
  local active, msgk, statek = T .. ':active', T .. ':msg', T .. ':state'
  local ids = redis.call('ZRANGE', active, '-inf', now, 'BYSCORE', 'LIMIT', 0, max)
  local back = {}
  for _, id in ipairs(ids) do
    local m = redis.call('HGET', msgk, id)
    redis.call('ZREM', active, id)
    if m then
      local r = record_get(statek, id)
      local key = r[10]
      r[1], r[4], r[5], r[10] = 'pending', '', 'lease expired (worker crashed or stalled)', ''
      record_put(statek, id, r) -- the message stays in T:msg, for inspectors
      back[#back + 1] = m
      key_release(T, key, size)
    end
  end
  local n = #back
  back = fair_route(T, back, true, size)
  if #back > 0 then sharded_push(T .. ':first', T .. ':last', T .. ':s:', size, back, true) end
  return n
end
