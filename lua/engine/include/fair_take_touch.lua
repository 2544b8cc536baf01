--@include fair_layout
--@include fair_read
-- fair_take_touch reads every shard the plan c takes from, in one call
-- before any write, so a shard moved away by a slot migration fails the
-- call here; a turn spans two shards at most while n is at most the shard
-- size, but the bound covers any n.
local function fair_take_touch(c)
  local T, size, touch = c.T, c.size, {}
  for _, k in ipairs(c.ks) do
    if k.took > 0 and k.key ~= '' then
      touch[#touch + 1] = k.head
      for f = k.first + 1, math.min(k.last, k.first + math.ceil(k.took / size)) do
        touch[#touch + 1] = T .. ':fq:' .. k.key .. ':' .. f
      end
    elseif k.took > 0 then
      fair_read(T .. ':s:', c.plain_first, c.plain_last, k.took + 2)
    end
  end
  for j = 1, #touch, 1000 do redis.call('EXISTS', unpack(touch, j, math.min(#touch, j + 999))) end
end
