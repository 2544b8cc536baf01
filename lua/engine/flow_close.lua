#!lua
--[[ flow_close: close batch id to adds from outside it; when nothing is
  pending it finishes now (callbacks into the outbox).
  KEYS[1] H:b:<id>
  ARGV[1] H  ARGV[2] now (ms, "" = server time)  ARGV[3] batch ID
  Returns: outbox entries due now, or FLOW_NOT_FOUND (include/codes.lua) ]]
--@include codes
--@include time
--@include flowhome
local H, id = ARGV[1], ARGV[3]
local now = now_ms(ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 0 then return FLOW_NOT_FOUND end
redis.call('HSET', KEYS[1], 'closed', 1)
batch_check(H, id, now)
return flow_due(H, now)
