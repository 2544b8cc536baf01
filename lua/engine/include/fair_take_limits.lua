--@include fair_layout
-- fair_take_limits fills in k, the plan's entry of a key with a list
-- (rec: its T:fk record; avail: its T:fz count; stopped: paused; running:
-- its tasks running), from the record and the key's limits: what it may
-- give, and its fate when it may not start now (the state busy, paused
-- or waiting, until k.due).
local function fair_take_limits(c, k, rec, avail, stopped, running)
  local lim, now = c.lim, c.now
  local f, l = string.match(rec, '^(-?%d+) (-?%d+)')
  k.first, k.last = tonumber(f), tonumber(l)
  -- the head shard's name, built from the record's own digits: a number
  -- joined to a string is formatted, which costs more
  k.head = c.T .. ':fq:' .. k.key .. ':' .. f
  k.avail = tonumber(avail or 0) or 0
  k.room = math.huge
  if stopped then k.fate = 'p' end -- paused
  if k.fate == 'turn' and lim.keyconc > 0 then
    k.room = lim.keyconc - tonumber(running or 0) - (c.leased[k.key] or 0)
    if k.room <= 0 then k.fate = 'b' end -- busy
  end
  if k.fate == 'turn' and lim.keyrate > 0 then
    local log = c.T .. ':kr:' .. k.key
    redis.call('ZREMRANGEBYSCORE', log, '-inf', now - lim.per)
    local used = redis.call('ZCARD', log)
    if lim.keyrate - used < k.room then
      k.room, k.ratebound = lim.keyrate - used, true
    end
    if k.room <= 0 then
      local oldest = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
      k.fate, k.due = 'w', math.max(now + 1, (tonumber(oldest[2]) or now) + lim.per) -- waiting
    end
  end
end
