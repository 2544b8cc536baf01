--@include fair_layout
-- fair_set records key's list: its first and last shard and its state
-- (FAIR_STATE).
local function fair_set(T, key, first, last, state)
  redis.call('HSET', T .. FAIR.lists, key, first .. ' ' .. last .. ' ' .. state)
end
