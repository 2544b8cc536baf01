-- flow_due returns how many outbox entries are visible at now.
local function flow_due(H, now)
  return redis.call('ZCOUNT', H .. ':out', '-inf', now)
end
