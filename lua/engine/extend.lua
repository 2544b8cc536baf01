#!lua flags=allow-oom
--[[ extend: refresh the leases of a worker's running tasks.
  KEYS[1] T:active  KEYS[2] T:state  KEYS[3] T:cancel (id -> when an
  operator asked to cancel it)
  ARGV[1] now (ms, "" = server time)  ARGV[2] lease (ms)
  ARGV[3..] pairs: id, token
  A lease is refreshed only under its current token; a task whose lease
  was taken over (reaped, handed to another worker) is reported lost so its
  handler can be cancelled. A task an operator asked to cancel is reported
  cancelled (and the request consumed); its lease is refreshed meanwhile.
  Returns: {lost IDs, cancelled IDs} ]]
--@include time
--@include record
local now = now_ms(ARGV[1])
local deadline = now + tonumber(ARGV[2])
local lost, cancelled = {}, {}
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  if record_held(KEYS[2], id, ARGV[i + 1]) and redis.call('ZSCORE', KEYS[1], id) then
    redis.call('ZADD', KEYS[1], deadline, id)
    if redis.call('ZREM', KEYS[3], id) == 1 then cancelled[#cancelled + 1] = id end
  else
    lost[#lost + 1] = id
  end
end
return {lost, cancelled}
