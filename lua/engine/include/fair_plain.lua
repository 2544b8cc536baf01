--@include fair_layout
--@include fair_plain_count
-- fair_plain puts "" in the ring when the partition's pending list holds
-- tasks and "" is not there: the tasks with no key take their turns too.
local function fair_plain(T, size)
  if redis.call('EXISTS', T .. ':fs') == 1 then return end
  if fair_plain_count(T, size) == 0 then return end
  redis.call('SET', T .. ':fs', 1)
  redis.call('RPUSH', T .. ':fr', '')
end
