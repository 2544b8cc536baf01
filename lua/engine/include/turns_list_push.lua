--@include fair_layout
--@include fair_set
--@include fair_shards_push
--@include turns_mark
-- turns_list_push adds msgs to the list of a key that has no list but
-- placed tasks still to be reached: they wait behind those, so the key
-- takes state marked (or paused) and its marker brings it into the ring.
local function turns_list_push(T, key, a, msgs, left, size, paused)
  local f, l = fair_shards_push(T .. ':fq:' .. key .. ':', 0, 0, size, msgs, left)
  local state = paused and 'p' or 'm' -- paused or marked
  fair_set(T, key, f, l, state)
  redis.call('ZADD', T .. ':fz', #msgs, key) -- was the placed count: now the list's
  redis.call('ZADD', T .. ':fl', 0, key)
  redis.call('INCRBY', T .. ':fn', #msgs)
  if paused then redis.call('INCRBY', T .. ':fh', #msgs) end
  turns_mark(T, key, a)
end
