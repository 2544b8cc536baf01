--@include fair_layout
--@include fair_push
--@include turns_get
--@include turns_rec
--@include turns_base
--@include turns_waiting
--@include turns_pack
--@include turns_drop
--@include turns_list_push
-- turns_push adds msgs of key to its list (fair_push), minding tasks of it
-- placed in turns: its list waits behind them.
local function turns_push(T, key, msgs, left, size)
  if redis.call('HEXISTS', T .. ':fk', key) == 0 then
    local a = turns_rec(redis.call('HGET', T .. ':fa', key))
    if a then
      local cur, popped, pass = turns_get(T)
      if a.lr >= turns_base(cur, pass) or turns_waiting(a, cur, popped) > 0 then
        local paused = redis.call('SISMEMBER', T .. ':fp', key) == 1
        turns_list_push(T, key, a, msgs, left, size, paused)
        redis.call('HSET', T .. ':fa', key, turns_pack(a, cur, popped))
        return
      end
      turns_drop(T, {key}) -- every placed task was taken
    end
  end
  fair_push(T, key, msgs, left, size)
end
