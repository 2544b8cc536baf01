--@include msgid
-- Reading a message's later fields without decoding it (Redis's cmsgpack
-- does not read every type a message holds). Only scripts that need them
-- include this, so the hot scripts do not define these functions per call.

-- msg_widths: the length-field width of each msgpack string or binary
-- header, and the body width of each fixed-size integer header.
local MSG_LEN_WIDTH = {[0xc4] = 1, [0xc5] = 2, [0xc6] = 4, [0xd9] = 1, [0xda] = 2, [0xdb] = 4}
local MSG_INT_WIDTH = {[0xcc] = 1, [0xcd] = 2, [0xce] = 4, [0xcf] = 8, [0xd0] = 1, [0xd1] = 2, [0xd2] = 4, [0xd3] = 8}

-- msg_skip returns the position after the msgpack value at pos (a string,
-- binary, boolean, nil or integer: what a message holds), or nil.
local function msg_skip(m, pos)
  local h = string.byte(m, pos)
  if not h then return nil end
  if h <= 0x7f or h >= 0xe0 or h == 0xc0 or h == 0xc2 or h == 0xc3 then return pos + 1 end
  if h >= 0xa0 and h <= 0xbf then return pos + 1 + h - 0xa0 end
  if MSG_INT_WIDTH[h] then return pos + 1 + MSG_INT_WIDTH[h] end
  local w = MSG_LEN_WIDTH[h]
  if not w then return nil end
  local len = 0
  for i = 1, w do
    local c = string.byte(m, pos + i)
    if not c then return nil end
    len = len * 256 + c
  end
  return pos + 1 + w + len
end

-- msg_unique returns a message's uniqueness key, its tenth field, or ""
-- when it has none (or does not parse).
local function msg_unique(m)
  local h = string.byte(m, 1)
  local pos
  if h and h >= 0x90 and h <= 0x9f then
    if h - 0x90 < 10 then return '' end
    pos = 2
  elseif h == 0xdc then pos = 4
  elseif h == 0xdd then pos = 6
  else return '' end
  for _ = 1, 9 do
    pos = msg_skip(m, pos)
    if not pos then return '' end
  end
  return (msg_str(m, pos)) or ''
end
