--@include fair_layout
--@include turns_call
--@include turns_rec
-- turns_pop_touch reads the shards the first used items' trickles go to,
-- before the pop p's first write, so a shard moved away by a slot
-- migration fails the call before anything changed.
local function turns_pop_touch(p, keyof, hold, used)
  local T, tk, seen = p.T, {}, {}
  for i = 1, used do
    local key = keyof[i]
    if key and (p.trickle_all or hold[key]) and not seen[key] then
      seen[key] = true
      tk[#tk + 1] = key
    end
  end
  if #tk == 0 then return end
  local ls, as, touch = turns_call('HMGET', T .. ':fk', tk), turns_call('HMGET', T .. ':fa', tk), {}
  for j, key in ipairs(tk) do
    local first = ls[j] and tonumber(string.match(ls[j], '^(-?%d+)'))
    local a = turns_rec(as[j])
    local t = 0
    if first then t = (a and a.t >= first) and a.t or first - 1 end
    touch[#touch + 1] = T .. ':fq:' .. key .. ':' .. t
  end
  for j = 1, #touch, 1000 do redis.call('EXISTS', unpack(touch, j, math.min(#touch, j + 999))) end
end
