--@include wf_outbox
--@include wf_add
-- wf_release sends released node x, whose route is raw (m:x) and task e,
-- on its way, when e is not a wire.NodeTask (run reads those). With
-- dr, e goes into its partition's push (wf_flush writes it): a message
-- routed by raw, or a delivery recorded before routes. Else e is its
-- delivery, and goes into the outbox, visible at ats.
local function wf_release(r, x, raw, e, ats)
  local m = cmsgpack.unpack(raw)
  if r.size and m[7] then
    local due = 0
    if m[6] > 0 then due = m[6] elseif m[7] > 0 then due = r.now + m[7] end
    wf_add(r, x, m[1], m[2], m[4], e, due, raw, false)
    return
  end
  local id = m[1]
  if r.size then
    -- {queue, partition, partitions, id, message, at, in, unique, unique ttl}
    local ok, d = pcall(cmsgpack.unpack, e)
    if ok and type(d) == 'table' and type(d[5]) == 'string' then
      local due = 0
      if d[6] > 0 then due = d[6] elseif d[7] > 0 then due = r.now + d[7] end
      wf_add(r, x, d[4], d[1], d[2], d[5], due, raw, e)
      return
    end
    -- a delivery this script cannot read (an older producer wrote its
    -- message as binary, which cmsgpack lacks) goes the outbox's way:
    -- Go reads both
  end
  wf_outbox(r, id, e, ats)
end
