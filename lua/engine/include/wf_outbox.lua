-- wf_outbox puts task id, of delivery e, into the home's outbox, visible
-- at ats, for the caller or a sweeper to deliver.
local function wf_outbox(r, id, e, ats)
  r.out[#r.out + 1], r.out[#r.out + 2] = ats, id
  r.outmsg[#r.outmsg + 1], r.outmsg[#r.outmsg + 2] = id, e
  r.released[#r.released + 1] = id
end
