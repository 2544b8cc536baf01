-- task_set finds which of the given sorted sets holds id: it returns the
-- index in sets (a list of keys) and the key, or nil.
local function task_set(sets, id)
  for i, key in ipairs(sets) do
    if redis.call('ZSCORE', key, id) then return i, key end
  end
  return nil
end
