-- feed_page returns up to limit {member, rank, ...} after the marker member
-- (the start when marker is empty), oldest first, or newest first when desc is
-- true (then "after" means older than the marker). It returns nil when the
-- marker is no longer in the feed.
local function feed_page(feed_key, marker, limit, desc)
  local bound = desc and '+inf' or '-inf'
  if marker ~= '' then
    local score = redis.call('ZSCORE', feed_key, marker)
    if not score then return nil end
    bound = '(' .. score
  end
  if desc then
    return redis.call('ZRANGE', feed_key, bound, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, limit, 'WITHSCORES')
  end
  return redis.call('ZRANGE', feed_key, bound, '+inf', 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
end
