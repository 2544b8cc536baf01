--@include bytes_less
-- zset_position returns how many members of the sorted set key order before
-- (score, member) in ascending order, and whether that very pair is in the
-- set. The pair need not be there any more: a binary search by rank over
-- the members of equal score places it. O(log(n)^2), whatever the set size.
local function zset_position(key, score, member)
  local s = redis.call('ZSCORE', key, member)
  if s and tonumber(s) == score then
    return redis.call('ZRANK', key, member), true
  end
  local lo = redis.call('ZCOUNT', key, '-inf', '(' .. score)
  local hi = redis.call('ZCOUNT', key, '-inf', score)
  -- members of rank lo..hi-1 share this score: find the first above member
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', key, mid, mid)[1]
    if bytes_less(member, m) then hi = mid else lo = mid + 1 end
  end
  return lo, false
end
