-- RECORD_DEFAULTS: fields [1] to [10] of a record that has none yet (see
-- include/record.lua).
local RECORD_DEFAULTS = {'pending', 0, 0, '', '', 0, 0, 0, 0, ''}

-- record_fill gives the record table r defaults for the fields an older
-- record lacks, and returns it.
local function record_fill(r)
  for i = 1, #RECORD_DEFAULTS do
    if r[i] == nil then r[i] = RECORD_DEFAULTS[i] end
  end
  return r
end
