#!lua
--[[ flow_add: register tasks as members of batch id and put them into
  the home's outbox, before they are delivered: a member is registered
  before it can run, and a producer that dies after this call loses
  nothing (sweepers deliver the outbox once the grace has passed).
  KEYS[1] H:b:<id>
  ARGV[1] H  ARGV[2] now (ms, "" = server time)  ARGV[3] batch ID
  ARGV[4] grace (ms) before sweepers deliver  ARGV[5] 1 when the caller is
  a task of the batch (it may add after Close)
  ARGV[6..] pairs: task ID, its delivery (wire.Delivery)
  Returns: how many members are new, or (include/codes.lua)
  FLOW_NOT_FOUND, FLOW_FINISHED or FLOW_CLOSED ]]
--@include codes
--@include time
--@include flowhome
local H, id = ARGV[1], ARGV[3]
local now = now_ms(ARGV[2])
local f = redis.call('HMGET', KEYS[1], 'closed', 'finished')
if not f[1] then return FLOW_NOT_FOUND end
if f[2] ~= '0' then return FLOW_FINISHED end
if f[1] == '1' and ARGV[5] ~= '1' then return FLOW_CLOSED end
local mk, fresh = H .. ':bm:' .. id, 0
local at = now + tonumber(ARGV[4])
local outs, msgs = {}, {}
for i = 6, #ARGV, 2 do
  if redis.call('HSETNX', mk, ARGV[i], 'p') == 1 then
    fresh = fresh + 1
    outs[#outs + 1], outs[#outs + 2] = at, ARGV[i]
    msgs[#msgs + 1], msgs[#msgs + 2] = ARGV[i], ARGV[i + 1]
  end
end
if fresh > 0 then
  redis.call('ZADD', H .. ':out', unpack(outs))
  redis.call('HSET', H .. ':outmsg', unpack(msgs))
  redis.call('HINCRBY', KEYS[1], 'total', fresh)
  redis.call('HINCRBY', KEYS[1], 'pending', fresh)
end
return fresh
