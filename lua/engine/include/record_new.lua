-- record_new packs the record of a task that has not run yet: in state,
-- to be processed at next_at (ms).
local function record_new(state, next_at)
  return cmsgpack.pack({state, 0, 0, '', '', 0, 0, 0, next_at})
end
