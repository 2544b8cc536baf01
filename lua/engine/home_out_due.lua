#!lua flags=no-writes,allow-oom
--[[ home_out_due: the entries of home H's outbox visible now.
  KEYS[1] H:out  KEYS[2] H:outmsg
  ARGV[1] now (ms, "" = server time)  ARGV[2] max entries
  Returns: {task ID, delivery or false, ...}; false: the entry's delivery
  is gone (removed half-way), the ID is to be removed ]]
--@include time
local ids = redis.call('ZRANGE', KEYS[1], '-inf', now_ms(ARGV[1]), 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]))
if #ids == 0 then return {} end
local msgs = redis.call('HMGET', KEYS[2], unpack(ids))
local out = {}
for i, id in ipairs(ids) do
  out[#out + 1] = id
  out[#out + 1] = msgs[i]
end
return out
