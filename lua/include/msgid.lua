-- A task message is a msgpack array opening with two strings: the task ID
-- and its concurrency key ("" = none). Scripts read them here without
-- decoding the rest. A compact message (a plain task, internal/wire's
-- Message) opens with 0x91 or 0x92, then its ID: it has no key.

-- msg_str reads the msgpack string at pos, returning it and the position
-- after it, or nil when there is none.
local function msg_str(m, pos)
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

-- msg_head returns a message's task ID and concurrency key. A message that
-- does not open that way (a foreign or corrupted push) gets the ID "bad:"
-- and its SHA1, so it can be leased like any task and sent to dead by the
-- worker that fails to decode it; a third result, true, says so.
local function msg_head(m)
  -- first the layout every task enqueued by shardq has: a short array, a
  -- short ID, no concurrency key (three calls into C instead of six)
  local b, b2 = string.byte(m, 1, 2)
  if b and b >= 0x90 and b <= 0x9f and b2 and b2 > 0xa0 and b2 <= 0xbf then
    local last = b2 - 0xa0 + 2
    local nb = string.byte(m, last + 1) -- the key's header; in a compact message, the type's
    if nb == 0xa0 or (nb and b <= 0x92) then return string.sub(m, 3, last), '' end
  end
  local pos
  if b and b >= 0x90 and b <= 0x9f then pos = 2
  elseif b == 0xdc then pos = 4
  elseif b == 0xdd then pos = 6
  end
  local id, nxt
  if pos then id, nxt = msg_str(m, pos) end
  if not id or id == '' then return 'bad:' .. redis.sha1hex(m), '', true end
  if b == 0x91 or b == 0x92 then return id, '' end
  return id, (msg_str(m, nxt)) or ''
end
