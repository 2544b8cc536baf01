-- zset_top_score returns the highest score in the sorted set key, or nil.
local function zset_top_score(key)
  local top = redis.call('ZRANGE', key, 0, 0, 'REV', 'WITHSCORES')
  if #top == 0 then return nil end
  return tonumber(top[2])
end
