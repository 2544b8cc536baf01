--@include msg_head
--@include sharded
-- A task enqueue.lua pushed pending without a group (by the plain
-- path or the checked one) has no copy of its message in T:feed:msg: its
-- message is only in the pending list. T:feed:shards says where to look for
-- it: a zset of shard numbers, each scored by the first feed rank enqueue
-- pushed to that shard, written only when a push moves the tail pointer
-- (once per ShardSize tasks). A task of rank r is in the shard of the greatest
-- score <= r, or a later one (other writers roll shards unrecorded): readers
-- look through at most PENDING_LOOKUP_SHARDS shards from there.

local PENDING_LOOKUP_SHARDS = 8

-- pending_index records the rolls sharded_push returned ({i, n, ...}) for
-- items whose first feed rank is first.
local function pending_index(T, first, rolls)
  for i = 1, #rolls, 2 do
    redis.call('ZADD', T .. ':feed:shards', first + rolls[i] - 1, rolls[i + 1])
  end
end

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

-- pending_forget drops what trimmed feed entries leave behind: their
-- message copies in msg_key and the pending index entries no task in the
-- feed needs.
local function pending_forget(T, feed_key, msg_key, trimmed)
  if #trimmed == 0 then return end
  for j = 1, #trimmed, 1000 do
    redis.call('HDEL', msg_key, unpack(trimmed, j, math.min(#trimmed, j + 999)))
  end
  pending_index_trim(T, feed_key)
end

-- pending_lookup finds the messages of tasks still pending from their feed
-- ranks: ids[i] has rank ranks[i] (false when not in the feed). It returns a
-- table id -> message for those found, less those deleted by ID (T:tomb:
-- still in a shard until a dequeue drops them). Each shard is read once.
local function pending_lookup(T, ids, ranks)
  local out, seen, loaded = {}, {}, {}
  if #ids == 0 then return out end
  local first, last = shard_bounds(T .. ':first', T .. ':last')
  local tomb = redis.call('SMISMEMBER', T .. ':tomb', unpack(ids))
  for i, id in ipairs(ids) do
    local r = ranks[i]
    if r and tomb[i] == 0 then
      local e = redis.call('ZRANGE', T .. ':feed:shards', r, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1)
      local s = math.max(first, tonumber(e[1]) or first)
      local function load(n)
        if loaded[n] then return end
        loaded[n] = true
        for _, m in ipairs(redis.call('LRANGE', T .. ':s:' .. n, 0, -1)) do
          if m ~= DUMMY then
            local mid = msg_head(m)
            if not seen[mid] then seen[mid] = m end
          end
        end
      end
      for n = s, math.min(last, s + PENDING_LOOKUP_SHARDS - 1) do
        if seen[id] then break end
        load(n)
      end
      -- a task given back to the head (a dead worker's in-flight list) sits
      -- in the first shard
      if not seen[id] then load(first) end
      out[id] = seen[id]
    end
  end
  return out
end
