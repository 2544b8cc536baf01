--@include fair_layout
--@include fair_get
--@include fair_set
--@include fair_enter
--@include fair_held
--@include fair_shards_push
-- fair_push adds msgs, all of key, at the tail of its tasks (or at their
-- head, for tasks given back), and brings key into the ring when it had
-- none waiting and is not paused.
local function fair_push(T, key, msgs, left, size)
  local first, last, state = fair_get(T, key)
  local new = first == nil
  if new then first, last = 0, 0 end
  local f, l = fair_shards_push(T .. ':fq:' .. key .. ':', first, last, size, msgs, left)
  if new then
    state = 'r' -- in the ring
    if redis.call('SISMEMBER', T .. ':fp', key) == 1 then state = 'p' end -- paused
    fair_set(T, key, f, l, state)
    redis.call('ZADD', T .. ':fl', 0, key)
    if state == 'r' then fair_enter(T, key) end -- in the ring
  elseif f ~= first or l ~= last then
    fair_set(T, key, f, l, state)
  end
  redis.call('ZINCRBY', T .. ':fz', #msgs, key)
  redis.call('INCRBY', T .. ':fn', #msgs)
  if fair_held(state) then redis.call('INCRBY', T .. ':fh', #msgs) end
end
