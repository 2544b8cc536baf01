--@include counter
-- A ranked feed (after Zaqar's Redis driver) is a sorted set of members
-- scored by rank. Ranks come from a counter inside the appending script, so a
-- batch gets a contiguous run and no member is ever stored with a rank below
-- one already visible: a reader that pages by marker never misses an entry.

-- feed_trim_step is how many ranks pass between two trims of a feed of
-- capacity cap: a trim costs up to seven commands (with the message copies
-- and the pending index), so a busy feed trims once per step appends, a
-- sixteenth of its cap and at most 256 (0.03 commands per single enqueue at
-- the default 10,000), and holds at most cap + step - 1 members meanwhile.
-- A small feed trims at every append. enqueue_one.lua repeats this
-- formula inline, before any include: change both together.
local function feed_trim_step(cap)
  return math.max(1, math.min(256, math.floor(cap / 16)))
end

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

-- feed_insert adds members ranked first, first + 1, ... (ranks the caller
-- took from the counter) and trims the feed as feed_append says.
local function feed_insert(feed_key, members, first, cap)
  local n = #members
  local last = first + n - 1
  local zargs = {}
  for i = 1, n do
    zargs[#zargs + 1] = first + i - 1
    zargs[#zargs + 1] = members[i]
    if #zargs >= 1000 then
      redis.call('ZADD', feed_key, unpack(zargs))
      zargs = {}
    end
  end
  if #zargs > 0 then redis.call('ZADD', feed_key, unpack(zargs)) end
  local trimmed = {}
  if cap > 0 then
    local step = feed_trim_step(cap)
    if math.floor(last / step) ~= math.floor((first - 1) / step) then
      local over = redis.call('ZCARD', feed_key) - cap
      if over > 0 then
        trimmed = redis.call('ZRANGE', feed_key, 0, over - 1)
        redis.call('ZREMRANGEBYRANK', feed_key, 0, over - 1)
      end
    end
  end
  return first, trimmed
end

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
