#!lua
--[[ cancel_task: ask the worker running a task to cancel its handler.
  KEYS[1] T:active  KEYS[2] T:cancel (zset id -> when asked, ms)
  ARGV[1] now (ms, "" = server time)  ARGV[2] task ID  ARGV[3] how long an
  unanswered request is kept (ms)
  Only the request is recorded: the worker's heartbeat reads T:cancel and
  cancels the handler as if its lease were lost. Requests older than the
  keep time (their task finished first) are dropped.
  Returns: 1 requested, 0 the task is not active ]]
--@include time
local now = now_ms(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - tonumber(ARGV[3])))
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[2], now, ARGV[2])
return 1
