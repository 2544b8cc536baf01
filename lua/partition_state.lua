#!lua
--[[ partition_state: close or reopen queue partition T, for a resize.
  A closed partition (its queue's partition count was lowered) drains and
  takes no new task: T:closed exists, which enqueue.lua and
  enqueue_capped.lua check, and its rank counter holds "closed:<count>",
  which INCRBY refuses, so enqueue_one.lua needs no check of its own: its
  first command fails before any write. Reopening restores the count.
  KEYS[1] T:closed  KEYS[2] T:feed:rank
  ARGV[1] "close" or "open"
  Returns: 1 when the state changed, 0 when it already was so. ]]
local rank = redis.call('GET', KEYS[2])
local held = rank and string.match(rank, '^closed:(%d+)$')
if ARGV[1] == 'close' then
  if held and redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
  redis.call('SET', KEYS[1], 1)
  if not held then redis.call('SET', KEYS[2], 'closed:' .. (tonumber(rank) or 0)) end
  return 1
elseif ARGV[1] == 'open' then
  local was = redis.call('DEL', KEYS[1])
  if held then
    if tonumber(held) > 0 then redis.call('SET', KEYS[2], held) else redis.call('DEL', KEYS[2]) end
    return 1
  end
  return was
end
return redis.error_reply('partition_state: ARGV[1] is ' .. tostring(ARGV[1]) .. ', want close or open')
