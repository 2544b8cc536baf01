-- msgpack_short_head reads the head every task with a generated ID and no
-- group has: a fixarray, a fixstr ID, then an empty key, or (a
-- compact message, 0x91 or 0x92) none. It returns the position of the
-- ID's last byte, or nil for any other head, which the general reader
-- (msg_head) then reads. Three calls into C instead of six, on the path
-- every pop and enqueue takes; enqueue_one.lua repeats it inline, before
-- any include.
local function msgpack_short_head(m)
  local b, b2 = string.byte(m, 1, 2)
  if b and b >= 0x90 and b <= 0x9f and b2 and b2 > 0xa0 and b2 <= 0xbf then
    local last = b2 - 0xa0 + 2
    local nb = string.byte(m, last + 1) -- the key's header; in a compact message, the type's
    if nb == 0xa0 or (nb and b <= 0x92) then return last end
  end
  return nil
end
