--@include pending_index_trim
-- pending_forget drops what trimmed feed entries leave behind: their
-- message copies in msg_key and the pending index entries no task in the
-- feed needs.
local function pending_forget(T, feed_key, msg_key, trimmed)
  if #trimmed == 0 then return end
  for j = 1, #trimmed, 1000 do
    redis.call('HDEL', msg_key, unpack(trimmed, j, math.min(#trimmed, j + 999)))
  end
  pending_index_trim(T, feed_key)
end
