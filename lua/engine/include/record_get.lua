--@include record_decode
-- record_get returns the record of id as a table, and whether it existed.
local function record_get(state_key, id)
  local raw = redis.call('HGET', state_key, id)
  return record_decode(raw), raw ~= false and raw ~= nil
end
