#!lua
--[[ quota_lock: begin a rebalance of a partitioned queue's fleet-wide
  limits, at the queue's quota home H (its own slot).
  KEYS[1] H:lock  KEYS[2] H:epoch  KEYS[3] H:quota
  ARGV[1] lock ttl (ms)
  ARGV[2] "set" to store new limits (ARGV[3] concurrency, ARGV[4] rate,
    ARGV[5] per ms; 0 = none), "" to rebalance the stored ones
  Returns: {epoch, concurrency, rate, per, recorded}: epoch > 0 when the
  caller now holds the lock (every later step of the rebalance carries it);
  epoch 0 when another rebalance holds it, or (without "set") when the queue
  has no fleet-wide limit, so there is nothing to do. The epoch only grows:
  partitions refuse steps of an older one (quota_report, quota_set).
  recorded is one more than the highest partition H:quota holds a record
  for (c:<n>, r:<n>), 0 with none: a rebalance covers at least that many
  partitions, so one whose caller knows fewer (a layout it has not read
  yet) still counts the quotas of the others. ]]
if ARGV[2] == 'set' then
  redis.call('HSET', KEYS[3], 'conc', ARGV[3], 'rate', ARGV[4], 'per', ARGV[5])
end
local v = redis.call('HMGET', KEYS[3], 'conc', 'rate', 'per')
local conc, rate, per = tonumber(v[1]) or 0, tonumber(v[2]) or 0, tonumber(v[3]) or 1000
if ARGV[2] ~= 'set' and conc == 0 and rate == 0 then return {0, 0, 0, per, 0} end
if redis.call('EXISTS', KEYS[1]) == 1 then return {0, conc, rate, per, 0} end
local epoch = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], epoch, 'PX', tonumber(ARGV[1]))
local recorded = 0
for _, f in ipairs(redis.call('HKEYS', KEYS[3])) do
  local n = tonumber(string.match(f, '^[cr]:(%d+)$'))
  if n and n >= recorded then recorded = n + 1 end
end
return {epoch, conc, rate, per, recorded}
