--@include dummy
--@include shard_bounds
-- sharded_pop removes up to count items from one end, moving the end pointer
-- past every shard it empties, and returns them in pop order with dummies
-- dropped. It also returns the end shard number after the pop: the shard a
-- blocking reader should wait on.
local function sharded_pop(first_key, last_key, prefix, count, left)
  local first, last = shard_bounds(first_key, last_key)
  local cmd = left and 'LPOP' or 'RPOP'
  local out = {}
  while #out < count do
    local cur = left and first or last
    local want = count - #out
    local got = redis.call(cmd, prefix .. cur, want) or {}
    for _, v in ipairs(got) do
      if v ~= DUMMY then out[#out + 1] = v end
    end
    if #got < want then
      -- this shard is empty now: step to the next one, if there is one
      if first >= last then break end
      if left then
        first = first + 1
        redis.call('SET', first_key, first)
      else
        last = last - 1
        redis.call('SET', last_key, last)
      end
    end
  end
  return out, (left and first or last)
end
