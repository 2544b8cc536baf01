-- msg_id returns the task ID a message opens with: a msgpack array whose
-- first element is the ID string. A message that does not open that way (a
-- foreign or corrupted push) gets "bad:" and its SHA1, so it can be leased
-- like any task and sent to dead by the worker that fails to decode it.
local function msg_id(m)
  local pos
  local b = string.byte(m, 1)
  if b and b >= 0x90 and b <= 0x9f then pos = 2
  elseif b == 0xdc then pos = 4
  elseif b == 0xdd then pos = 6
  end
  local h = pos and string.byte(m, pos)
  local len, start
  if h and h >= 0xa0 and h <= 0xbf then len, start = h - 0xa0, pos + 1
  elseif h == 0xd9 then len, start = string.byte(m, pos + 1), pos + 2
  elseif h == 0xda then
    local hi, lo = string.byte(m, pos + 1, pos + 2)
    if hi and lo then len, start = hi * 256 + lo, pos + 3 end
  end
  if not len or len == 0 or start + len - 1 > #m then
    return 'bad:' .. redis.sha1hex(m)
  end
  return string.sub(m, start, start + len - 1)
end
