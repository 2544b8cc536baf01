#!lua
--[[ flow_chain_new: create a chain at its home H, its first link in the
  outbox (the caller delivers it; sweepers do after the grace).
  KEYS[1] H:c:<id>
  ARGV[1] H  ARGV[2] now (ms, "" = server time)  ARGV[3] chain ID
  ARGV[4] retention after it finished (ms, 0 = forever)  ARGV[5] grace (ms)
  ARGV[6..] per link, in order: task ID, queue, type, delivery
  Returns: FLOW_CREATED or FLOW_ID_TAKEN (include/codes.lua) ]]
--@include codes
--@include time
--@include flowhome
local H, id = ARGV[1], ARGV[3]
local now = now_ms(ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 1 then return FLOW_ID_TAKEN end
local n = (#ARGV - 5) / 4
local kv = {'n', n, 'cur', 1, 'state', 'running', 'created', now, 'finished', 0,
  'ret', ARGV[4], 'stop_link', 0, 'stop_err', ''}
for k = 1, n do
  local i = 6 + (k - 1) * 4
  kv[#kv + 1], kv[#kv + 2] = 'i:' .. k, ARGV[i]
  kv[#kv + 1], kv[#kv + 2] = 'q:' .. k, ARGV[i + 1]
  kv[#kv + 1], kv[#kv + 2] = 't:' .. k, ARGV[i + 2]
  kv[#kv + 1], kv[#kv + 2] = 'e:' .. k, ARGV[i + 3]
  kv[#kv + 1], kv[#kv + 2] = 's:' .. k, k == 1 and 'p' or 'w'
end
redis.call('HSET', KEYS[1], unpack(kv))
flow_out_put(H, ARGV[6], ARGV[9], now + tonumber(ARGV[5]))
flow_recent(H, 'c:' .. id, now)
return FLOW_CREATED
