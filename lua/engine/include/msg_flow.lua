--@include msgpack_array
--@include msgpack_skip
--@include msgpack_map
--@include msgpack_str
-- msg_flow returns a message's flow ref (its 13th field, wire.Message.Flow)
-- or "" when it has none or does not parse. A flow task's message has
-- exactly 13 fields, the headers (12th) an empty map when there are none.
local function msg_flow(m)
  local n, pos = nil, nil
  if m then n, pos = msgpack_array(m, 1) end
  if n ~= 13 or pos ~= 2 then return '' end
  for _ = 1, 11 do
    pos = msgpack_skip(m, pos)
    if not pos then return '' end
  end
  local h
  h, pos = msgpack_map(m, pos)
  if not h then return '' end
  for _ = 1, 2 * h do
    pos = msgpack_skip(m, pos)
    if not pos then return '' end
  end
  return (msgpack_str(m, pos)) or ''
end
