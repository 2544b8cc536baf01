-- pending_index_trim drops the index entries no task in the feed needs: all
-- below the one that covers the feed's lowest rank.
local function pending_index_trim(T, feed_key)
  local low = redis.call('ZRANGE', feed_key, 0, 0, 'WITHSCORES')
  if #low == 0 then return end
  local keep = redis.call('ZRANGE', T .. ':feed:shards', low[2], '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1, 'WITHSCORES')
  if #keep > 0 then
    redis.call('ZREMRANGEBYSCORE', T .. ':feed:shards', '-inf', '(' .. keep[2])
  end
end
