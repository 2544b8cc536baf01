-- RECENT_CAP bounds each home's feed of recent flows.
local RECENT_CAP = 1000

-- home_recent records a new flow ("b:<id>", "w:<id>") in H's recent feed.
local function home_recent(H, member, now)
  local key = H .. ':recent'
  redis.call('ZADD', key, now, member)
  local over = redis.call('ZCARD', key) - RECENT_CAP
  if over > 0 then redis.call('ZREMRANGEBYRANK', key, 0, over - 1) end
end

