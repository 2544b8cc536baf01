--@include feed_resume
--@include feed_insert
-- feed_append adds members with consecutive ranks, trims the feed to its
-- newest cap members (cap 0 = unbounded; see feed_trim_step for when) and
-- returns the first rank given and the list of trimmed members, so the
-- caller can delete what they owned. The common append costs INCRBY and
-- ZADD: the counter's absence shows in INCRBY's reply (feed_resume), not in
-- a check before it.
local function feed_append(feed_key, rank_key, members, cap)
  local n = #members
  if n == 0 then return 0, {} end
  local last = feed_resume(feed_key, rank_key, redis.call('INCRBY', rank_key, n), n)
  return feed_insert(feed_key, members, last - n + 1, cap)
end
