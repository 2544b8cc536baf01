--@include fair_layout
-- turns_resume: a resumed key with no list starts its placed tasks as
-- they are reached again (one with a list waits for its marker: see
-- fair_back).
local function turns_resume(T, key)
  if redis.call('HEXISTS', T .. ':fk', key) == 0 then redis.call('HDEL', T .. ':fx', key) end
end
