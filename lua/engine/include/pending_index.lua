-- pending_index records the rolls sharded_push returned ({i, n, ...}) for
-- items whose first feed rank is first.
local function pending_index(T, first, rolls)
  for i = 1, #rolls, 2 do
    redis.call('ZADD', T .. ':feed:shards', first + rolls[i] - 1, rolls[i + 1])
  end
end
