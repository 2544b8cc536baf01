-- msgpack_array reads the msgpack array header at pos of m (fixarray,
-- array16 or array32) and returns its element count and the position of
-- its first element, or nil when there is none or m ends inside it.
local function msgpack_array(m, pos)
  local h = string.byte(m, pos)
  if not h then return nil end
  if h >= 0x90 and h <= 0x9f then return h - 0x90, pos + 1 end
  local w = h == 0xdc and 2 or h == 0xdd and 4
  if not w then return nil end
  local n = 0
  for i = 1, w do
    local c = string.byte(m, pos + i)
    if not c then return nil end
    n = n * 256 + c
  end
  return n, pos + 1 + w
end
