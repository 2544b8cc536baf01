-- wf_stored_kids returns the stored children list of existing node x of
-- workflow W in its spaced form (include/wf_kids.lua), or false for
-- none, read once per call into stored.
local function wf_stored_kids(W, x, stored)
  local cs = stored[x]
  if cs == nil then
    cs = redis.call('HGET', W, 'c:' .. x)
    cs = cs and wf_lib().kids(cs) or false
    stored[x] = cs
  end
  return cs
end
