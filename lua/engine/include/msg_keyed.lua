--@include msgpack_short_head
--@include msg_head
-- msg_keyed reports whether a message has a group: such a task
-- may be parked (T:k:<key>) away from the shards, so it keeps its copy.
local function msg_keyed(m)
  if msgpack_short_head(m) then return false end
  local _, key = msg_head(m)
  return key ~= ''
end
