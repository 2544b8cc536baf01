-- msgpack_skip returns the position after the msgpack value at pos of m
-- (a string, binary, boolean, nil or integer: what a task message holds),
-- or nil for any other header or when m ends inside a length. A value
-- whose body runs past m's end gives a position past it: the next read
-- finds nothing there.

-- MSGPACK_LEN_WIDTH: the length field's width of each string and binary
-- header; MSGPACK_INT_WIDTH: the body's width of each fixed-size integer.
local MSGPACK_LEN_WIDTH = {[0xc4] = 1, [0xc5] = 2, [0xc6] = 4, [0xd9] = 1, [0xda] = 2, [0xdb] = 4}
local MSGPACK_INT_WIDTH = {[0xcc] = 1, [0xcd] = 2, [0xce] = 4, [0xcf] = 8, [0xd0] = 1, [0xd1] = 2, [0xd2] = 4, [0xd3] = 8}

local function msgpack_skip(m, pos)
  local h = string.byte(m, pos)
  if not h then return nil end
  if h <= 0x7f or h >= 0xe0 or h == 0xc0 or h == 0xc2 or h == 0xc3 then return pos + 1 end
  if h >= 0xa0 and h <= 0xbf then return pos + 1 + h - 0xa0 end
  if MSGPACK_INT_WIDTH[h] then return pos + 1 + MSGPACK_INT_WIDTH[h] end
  local w = MSGPACK_LEN_WIDTH[h]
  if not w then return nil end
  local len = 0
  for i = 1, w do
    local c = string.byte(m, pos + i)
    if not c then return nil end
    len = len * 256 + c
  end
  return pos + 1 + w + len
end
