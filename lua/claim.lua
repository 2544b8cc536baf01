#!lua flags=allow-oom
--[[ claim: lease what a blocking move put into a worker's in-flight list.
  KEYS[1] T:inflight:<worker>  KEYS[2] T:active  KEYS[3] T:msg  KEYS[4] T:state
  KEYS[5] T:paused  KEYS[6] T:first  KEYS[7] T:last
  ARGV[1] T:s:  ARGV[2] n  ARGV[3] lease (ms)  ARGV[4] now (ms, "" = server time)
  ARGV[5] worker ID  ARGV[6] concurrency limit (0 = none)  ARGV[7] shard size
  Takes up to n items, dropping dummies. When the queue is paused or at its
  limit they go back to the head of the pending list instead.
  Returns: {status, items left in the in-flight list, id, message, attempt,
  token, ...}; status 0 leased (possibly none), 1 paused, 2 at the limit. ]]
--@include time
--@include sharded
--@include lease
local status = 0
local n = tonumber(ARGV[2])
if redis.call('EXISTS', KEYS[5]) == 1 then
  status = 1
else
  n = lease_room(KEYS[2], n, tonumber(ARGV[6]))
  if n == 0 then status, n = 2, tonumber(ARGV[2]) end
end
local msgs = {}
while #msgs < n do
  local got = redis.call('LPOP', KEYS[1], n - #msgs)
  if not got then break end
  for _, v in ipairs(got) do
    if v ~= DUMMY then msgs[#msgs + 1] = v end
  end
end
local left = redis.call('LLEN', KEYS[1])
if status ~= 0 then
  if #msgs > 0 then sharded_push(KEYS[6], KEYS[7], ARGV[1], tonumber(ARGV[7]), msgs, true) end
  return {status, left}
end
local now = now_ms(ARGV[4])
local out = {0, left}
for _, v in ipairs(lease_tasks(KEYS[2], KEYS[3], KEYS[4], msgs, now, now + tonumber(ARGV[3]), ARGV[5])) do
  out[#out + 1] = v
end
return out
