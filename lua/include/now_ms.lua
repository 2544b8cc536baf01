-- now_ms returns arg as milliseconds when the caller supplied a time (tests
-- move the clock this way), otherwise the server's own clock, so a worker
-- with a skewed clock cannot decide leases or due times.
local function now_ms(arg)
  if arg and arg ~= '' and arg ~= '0' then
    return tonumber(arg)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
