-- keydepth_down counts n of key's tasks out, if the key is counted.
local function keydepth_down(T, key, n)
  if key == '' or n <= 0 then return end
  local h = T .. ':kdepth'
  if redis.call('HEXISTS', h, key) == 0 then return end
  if redis.call('HINCRBY', h, key, -n) <= 0 then redis.call('HDEL', h, key) end
end
