#!lua
--[[ partition_state: close or reopen queue partition T, for a resize. A
  closed partition drains and takes no new task: its rank counter holds
  "closed:<count>" (include/closed.lua), which every enqueue path refuses.
  Reopening restores the count, so ranks go on where they were.
  KEYS[1] T:feed:rank
  ARGV[1] "close" or "open"
  Returns: 1 when the state changed, 0 when it already was so. ]]
--@include closed
local v = redis.call('GET', KEYS[1])
local closed = rank_closed(v)
if ARGV[1] == 'close' then
  if closed then return 0 end
  redis.call('SET', KEYS[1], 'closed:' .. rank_count(v))
  return 1
elseif ARGV[1] == 'open' then
  if not closed then return 0 end
  local n = rank_count(v)
  if n > 0 then redis.call('SET', KEYS[1], n) else redis.call('DEL', KEYS[1]) end
  return 1
end
return redis.error_reply('partition_state: ARGV[1] is ' .. tostring(ARGV[1]) .. ', want close or open')
