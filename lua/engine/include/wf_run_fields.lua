-- wf_run_fields returns the fields a run reads for released nodes
-- rel[k..last]: each one's task, and without dr its route too (every
-- task goes by its route then: read with it). Each task's field goes
-- (r.gone), and a node released unread (RELEASED) has its state written.
local function wf_run_fields(r, rel, k, last, width)
  local fields, gone, kv, nodes = {}, r.gone, r.kv, r.nodes
  local ng, nk, ftask, fstate, enqueued = #gone, #kv, WF_FIELD.task, WF_FIELD.state, WF_STATE.enqueued
  for j = k, last do
    local x = rel[j]
    local e = ftask .. x
    local f = width * (j - k) + 1
    fields[f] = e
    if width == 2 then fields[f + 1] = WF_FIELD.route .. x end
    ng = ng + 1
    gone[ng] = e
    if nodes[x] == RELEASED then
      kv[nk + 1], kv[nk + 2] = fstate .. x, enqueued
      nk = nk + 2
    end
  end
  return fields
end
