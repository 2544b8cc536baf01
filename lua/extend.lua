#!lua flags=allow-oom
--[[ extend: refresh the leases of a worker's running tasks.
  KEYS[1] T:active  KEYS[2] T:state
  ARGV[1] now (ms, "" = server time)  ARGV[2] lease (ms)
  ARGV[3..] pairs: id, token
  A lease is refreshed only under its current token; a task whose lease
  was taken over (reaped, handed to another worker) is reported lost so its
  handler can be cancelled.
  Returns: the IDs whose lease is lost ]]
--@include time
--@include record
local now = now_ms(ARGV[1])
local deadline = now + tonumber(ARGV[2])
local lost = {}
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  if record_held(KEYS[2], id, ARGV[i + 1]) and redis.call('ZSCORE', KEYS[1], id) then
    redis.call('ZADD', KEYS[1], deadline, id)
  else
    lost[#lost + 1] = id
  end
end
return lost
