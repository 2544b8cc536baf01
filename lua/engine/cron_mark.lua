#!lua
--[[ cron_mark: record a periodic schedule's state for inspectors.
  KEYS[1] <prefix>:cron (hash name -> JSON)
  ARGV[1] schedule name  ARGV[2] JSON of the schedule's description, with
  its last run in "last" (unix ms, 0 = unknown) and next in "next"
  The stored "last" never moves backwards: a scheduler that did not
  enqueue a tick, or wakes late, cannot erase what another recorded.
  Returns: the stored "last" (unix ms) after the update ]]
local new = cjson.decode(ARGV[2])
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if raw then
  local old = cjson.decode(raw)
  if (tonumber(old.last) or 0) > (tonumber(new.last) or 0) then new.last = old.last end
end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(new))
return tonumber(new.last) or 0
