--@include msgpack_array
--@include msgpack_str
--@include msgpack_short_head
-- A task message is a msgpack array opening with two strings: the task ID
-- and its group ("" = none). Scripts read them here without
-- decoding the rest. A compact message (a plain task, internal/wire's
-- Message) opens with 0x91 or 0x92, then its ID: it has no key.

-- msg_head returns a message's task ID and group. A message that
-- does not open that way (a foreign or corrupted push) gets the ID "bad:"
-- and its SHA1, so it can be leased like any task and sent to dead by the
-- worker that fails to decode it; a third result, true, says so. The
-- callers every leased task meets (fair_route, lease_tasks) test
-- msgpack_short_head first and call this only when it fails.
local function msg_head(m)
  local last = msgpack_short_head(m)
  if last then return string.sub(m, 3, last), '' end
  local n, pos = msgpack_array(m, 1)
  local id, nxt
  if n then id, nxt = msgpack_str(m, pos) end
  if not id or id == '' then return 'bad:' .. redis.sha1hex(m), '', true end
  if pos == 2 and (n == 1 or n == 2) then return id, '' end -- compact: no key
  return id, (msgpack_str(m, nxt)) or ''
end
