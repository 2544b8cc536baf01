-- home_due returns how many outbox entries are visible at now.
local function home_due(H, now)
  return redis.call('ZCOUNT', H .. ':out', '-inf', now)
end
