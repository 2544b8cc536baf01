#!lua
--[[ fair_key: an operator's setting of one group of partition T
  (include/fair.lua): pause it, resume it, or weigh it.
  KEYS[1] T:fp  KEYS[2] T:fw  KEYS[3] T:fk  KEYS[4] T:fr
  ARGV[1] T  ARGV[2] key  ARGV[3] "pause", "resume" or "weight"
  ARGV[4] the weight, for "weight" (1 sets the default back)
  A paused key leaves the ring at its next turn, and its tasks placed in
  turns go to its list as they are reached, so pausing costs the same
  however many keys wait; resuming puts it back at the ring's tail, after
  its placed tasks.
  Returns: 1 ]]
--@include fair
local T, key, op = ARGV[1], ARGV[2], ARGV[3]
if op == 'pause' then
  redis.call('SADD', KEYS[1], key)
  turns_lib().pause(T, key)
elseif op == 'resume' then
  fair_resume(T, key)
  turns_lib().resume(T, key)
elseif op == 'weight' then
  local w = tonumber(ARGV[4])
  if w == 1 then
    redis.call('HDEL', KEYS[2], key)
  else
    redis.call('HSET', KEYS[2], key, w)
  end
end
return 1
