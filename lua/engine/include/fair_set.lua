--@include fair_layout
-- fair_set records key's list: its first and last shard and its state
-- (a letter: fair_layout).
local function fair_set(T, key, first, last, state)
  redis.call('HSET', T .. ':fk', key, first .. ' ' .. last .. ' ' .. state)
end
