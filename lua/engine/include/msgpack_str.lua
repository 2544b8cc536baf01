-- msgpack_str reads the msgpack string at pos of m (fixstr, str8 or
-- str16: a task's strings are shorter than 64 KiB) and returns it and the
-- position after it, or nil when there is none or m ends inside it.
local function msgpack_str(m, pos)
  local h = string.byte(m, pos)
  local len, start
  if h and h >= 0xa0 and h <= 0xbf then len, start = h - 0xa0, pos + 1
  elseif h == 0xd9 then len, start = string.byte(m, pos + 1), pos + 2
  elseif h == 0xda then
    local hi, lo = string.byte(m, pos + 1, pos + 2)
    if hi and lo then len, start = hi * 256 + lo, pos + 3 end
  end
  if not len or start + len - 1 > #m then return nil end
  return string.sub(m, start, start + len - 1), start + len
end
