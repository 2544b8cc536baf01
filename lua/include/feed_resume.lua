--@include zset_top_score
-- feed_resume takes the reply of an INCRBY by n of the rank counter and
-- returns the last of the n ranks to give. A missing counter (or one at 0)
-- restarts from the feed's highest rank (0 when the feed is empty: no reader
-- can hold a marker ranked above that).
local function feed_resume(feed_key, rank_key, last, n)
  if last == n then
    local top = zset_top_score(feed_key)
    if top and top > 0 then
      last = redis.call('INCRBY', rank_key, top)
    end
  end
  return last
end
