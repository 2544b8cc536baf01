--@include record_get
-- record_held returns the record of id when the task is active under token
-- (the caller's lease is current), or nil when the caller's claim is stale.
local function record_held(state_key, id, token)
  local r, ok = record_get(state_key, id)
  if not ok or r[1] ~= 'active' or tonumber(r[3]) ~= tonumber(token) then
    return nil
  end
  return r
end
