-- wf_delivery returns the delivery (wire.Delivery) of message msg over
-- route m, a node's record with dr, for the outbox, which routes it
-- again.
local function wf_delivery(m, msg)
  return cmsgpack.pack({m[2], m[4], m[5], m[1], msg, m[6], m[7], '', 0})
end
