--@include record_decode
-- ack_keep keeps task id, acked in the call a (ack_tasks) with the stored
-- record raw, for retention ms: its done record goes to a.keptStates,
-- its expiry to a.expiries and its ID to a.kept, for ack_keep_write. The
-- call's first kept task starts a.gone, the acked tasks that leave no
-- record, with those acked before it.
local function ack_keep(a, id, raw, retention)
  if not a.kept then
    a.kept, a.keptStates, a.expiries, a.gone = {}, {}, {}, {}
    for x = 1, a.nd - 1 do a.gone[x] = a.done[x] end
  end
  local d = record_decode(raw) -- a table of its own: r may be shared
  d[1], d[8], d[10] = 'done', a.now, ''
  local states, expiries = a.keptStates, a.expiries
  states[#states + 1] = id
  states[#states + 1] = cmsgpack.pack(d)
  expiries[#expiries + 1] = a.now + retention
  expiries[#expiries + 1] = id
  a.kept[#a.kept + 1] = id
end
