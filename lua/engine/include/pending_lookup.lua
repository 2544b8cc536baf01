--@include msg_head
--@include dummy
--@include shard_bounds
-- PENDING_LOOKUP_SHARDS: the most shards a lookup reads from the one the
-- index gives (include/pendingref.lua).
local PENDING_LOOKUP_SHARDS = 8

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
