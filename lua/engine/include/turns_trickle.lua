--@include fair_layout
--@include fair_get
--@include fair_set
--@include fair_held
--@include turns_rec
--@include turns_mark
--@include turns_pack
-- turns_trickle moves m, a placed task of key reached while key may not
-- start it (paused, or limited), to key's list: after the tasks trickled
-- before it, before the tasks the list had, so a key's tasks start in
-- order. The key's list waits until its marker.
local function turns_trickle(T, key, m, cur, popped)
  local a = turns_rec(redis.call('HGET', T .. ':fa', key)) or {lr = cur, fill = 1, t = -1, mk = false, pos = {}}
  local first, last, state = fair_get(T, key)
  local t = a.t
  if not first then
    -- a new list: later tasks of the key go to shard 1, after this one
    state = redis.call('SISMEMBER', T .. ':fp', key) == 1 and 'p' or 'm' -- paused or marked
    t, first, last = 0, 0, 1
    fair_set(T, key, first, last, state)
    redis.call('ZADD', T .. ':fz', 0, key) -- the list's count from now on
  elseif t < first then
    t, first = first - 1, first - 1
    fair_set(T, key, first, last, state)
  end
  redis.call('RPUSH', T .. ':fq:' .. key .. ':' .. t, m)
  redis.call('ZINCRBY', T .. ':fz', 1, key)
  if fair_held(state) then redis.call('INCRBY', T .. ':fh', 1) end
  a.t = t
  turns_mark(T, key, a)
  redis.call('HSET', T .. ':fa', key, turns_pack(a, cur, popped))
  redis.call('ZADD', T .. ':fe', a.lr, key)
  redis.call('HSET', T .. ':fx', key, 1)
end
