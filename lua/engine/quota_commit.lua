#!lua
--[[ quota_commit: record a rebalance at the queue's quota home H and grant
  what may grow, then release the lock.
  KEYS[1] H:lock  KEYS[2] H:quota
  ARGV[1] epoch  ARGV[2] concurrency limit  ARGV[3] rate limit
  ARGV[4] partitions served: the rebalance covers more when the home holds
    records past them (quota_lock); a record past them that comes out 0 or
    none is deleted, so the partitions of a shrunk layout drop out once idle
  ARGV[5..] per partition, in order: concurrency quota now, wanted;
    rate quota now, wanted (each NONE: that kind not limited)
  "now" is what the partition holds after this rebalance's shrinks, read
  under its fence, so the record is exact; a grow is granted only out of
  what the limit leaves over the others' records, and recorded before the
  partition takes it. So the records' sum never exceeds the limit, and no
  partition ever holds more than its record: the partitions' quotas never
  sum past the limit (docs/ARCHITECTURE.md, "Limits across partitions").
  Returns: {1, granted concurrency, granted rate, ...} per partition (the
  quota to set; NONE: none), or {0} when the lock is no longer this epoch's
  (it expired and another rebalance may run: change nothing). ]]
--@include codes
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {0} end
local served = tonumber(ARGV[4])
local n = (#ARGV - 4) / 4
local out = {1}
for kind = 0, 1 do
  local limit = tonumber(ARGV[2 + kind])
  local have, want, sum = {}, {}, 0
  for p = 1, n do
    have[p] = tonumber(ARGV[5 + (p - 1) * 4 + kind * 2])
    want[p] = tonumber(ARGV[6 + (p - 1) * 4 + kind * 2])
    if have[p] > 0 then sum = sum + have[p] end
  end
  local left = math.max(0, limit - sum)
  for p = 1, n do
    local q = have[p]
    if limit > 0 and want[p] > math.max(q, 0) then
      local grow = math.min(want[p] - math.max(q, 0), left)
      left = left - grow
      q = math.max(q, 0) + grow
    end
    if limit <= 0 then q = NONE end
    local field = (kind == 0 and 'c:' or 'r:') .. (p - 1)
    if p > served and q <= 0 then
      redis.call('HDEL', KEYS[2], field)
    else
      redis.call('HSET', KEYS[2], field, q)
    end
    out[1 + (p - 1) * 2 + kind + 1] = q
  end
end
redis.call('DEL', KEYS[1])
return out
