--@include record_fill
-- record_decode turns a stored record (or false: none yet) into a table,
-- with defaults for fields an older record lacks.
local function record_decode(raw)
  if not raw then return {'pending', 0, 0, '', '', 0, 0, 0, 0, ''} end
  return record_fill(cmsgpack.unpack(raw))
end
