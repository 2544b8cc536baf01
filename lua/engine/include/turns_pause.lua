--@include fair_layout
--@include fair_get
--@include fair_set
--@include turns_get
--@include turns_rec
--@include turns_base
--@include turns_waiting
--@include turns_drop
--@include turns_mark
--@include turns_pack
-- turns_pause: a paused key's placed tasks go to its list as they are
-- reached, and a list waiting for its marker is held.
local function turns_pause(T, key)
  local a = turns_rec(redis.call('HGET', T .. ':fa', key))
  if not a then return end
  local cur, popped, pass = turns_get(T)
  if a.lr < turns_base(cur, pass) and turns_waiting(a, cur, popped) == 0 then
    turns_drop(T, {key})
    return
  end
  turns_mark(T, key, a)
  redis.call('HSET', T .. ':fa', key, turns_pack(a, cur, popped))
  redis.call('HSET', T .. ':fx', key, 1)
  local first, last, state = fair_get(T, key)
  if state == 'm' then -- marked
    fair_set(T, key, first, last, 'p') -- paused
    redis.call('INCRBY', T .. ':fh', tonumber(redis.call('ZSCORE', T .. ':fz', key) or 0))
  end
end
