-- msgpack_map reads the msgpack map header at pos of m (fixmap or map16;
-- nil reads as an empty map, as a task's absent headers) and returns its
-- entry count and the position of its first key, or nil when there is
-- none or m ends inside it.
local function msgpack_map(m, pos)
  local h = string.byte(m, pos)
  if h and h >= 0x80 and h <= 0x8f then return h - 0x80, pos + 1 end
  if h == 0xc0 then return 0, pos + 1 end
  if h ~= 0xde then return nil end
  local hi, lo = string.byte(m, pos + 1, pos + 2)
  if not lo then return nil end
  return hi * 256 + lo, pos + 3
end
