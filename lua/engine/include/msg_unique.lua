--@include msgpack_array
--@include msgpack_skip
--@include msgpack_str
-- msg_unique returns a message's uniqueness key, its tenth field, or ""
-- when it has none (or does not parse). Only scripts that need it include
-- it, so the hot scripts do not define the readers it needs per call.
local function msg_unique(m)
  local n, pos = msgpack_array(m, 1)
  if not n or n < 10 then return '' end
  for _ = 1, 9 do
    pos = msgpack_skip(m, pos)
    if not pos then return '' end
  end
  return (msgpack_str(m, pos)) or ''
end
