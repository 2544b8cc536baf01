--@include codes
--@include limits_get
--@include requeue_expired
--@include rate_room
-- dequeue_room applies the partition's limits to a wish for n tasks. It
-- returns how many may start, a status when none may (POP_FULL at the
-- concurrency limit, POP_RATE at the rate limit), the ms to wait, and the limits
-- it read, for the rest of the call.
local function dequeue_room(T, n, now, size)
  local conc, rate, per, keyconc, keyrate = limits_get(T)
  local lim = {conc = math.max(conc, 0), rate = math.max(rate, 0), keyconc = keyconc, keyrate = keyrate, per = per}
  if conc >= 0 then
    local active = T .. ':active'
    if redis.call('ZCARD', active) >= conc then
      -- a crashed holder's slot comes back with its lease, at once
      requeue_expired(T, now, conc, size)
    end
    n = math.min(n, conc - redis.call('ZCARD', active))
    if n <= 0 then return 0, POP_FULL, 0, lim end
  end
  if rate == 0 then return 0, POP_RATE, math.min(per, 250), lim end -- a rate quota of 0: look again soon
  if rate > 0 then
    local room, wait = rate_room(T, rate, per, now)
    if room == 0 then return 0, POP_RATE, wait, lim end
    n = math.min(n, room)
  end
  return n, POP_OK, 0, lim
end
