-- wf_split reads a node's task e as wire.NodeTask writes it, and
-- returns its task ID, queue, partition and message; nil for a bare
-- message or a delivery, which open with a msgpack array.
local function wf_split(e)
  local a, b, p1, p2 = byte(e, 1, 4)
  if not p2 or a == 0 or a >= 0x80 then return nil end
  local q = a + 5
  return sub(e, 5, q - 1), sub(e, q, q + b - 1), p1 * 256 + p2, sub(e, q + b)
end
