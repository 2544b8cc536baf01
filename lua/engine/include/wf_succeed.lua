--@include wf_note
--@include wf_joined
-- wf_succeed is wf_note of a success, for an ack, which reads its nodes first
-- (wf_load): an enqueued node, the common case, takes the steps of wf_set from
-- p to s inline, its counts tallied in r.ok for flush, and a node known
-- to have no children tells none.
local function wf_succeed(r, x, id, result)
  local n = r.nodes[x]
  if not n or n[1] ~= WF_STATE.enqueued then return wf_note(r, x, id, WF_STATE.succeeded, result, '') end
  if result ~= '' then
    local kv = r.kv
    kv[#kv + 1], kv[#kv + 2] = WF_FIELD.result .. x, result
  end
  n[1] = WF_STATE.succeeded
  if not n[7] then
    n[7] = true
    r.order[#r.order + 1] = x
  end
  r.ok = r.ok + 1
  if n[5] ~= false or wf_joined(r, x) then
    local fan = r.fan
    local f = #fan
    fan[f + 1], fan[f + 2], fan[f + 3], fan[f + 4] = x, WF_STATE.enqueued, WF_STATE.succeeded, n[5] or 0
  end
  return true
end
