--@include wf_node
--@include wf_set
-- wf_note records, in run r, node x (task id) reaching outcome ("s" or
-- "d"): from enqueued to either, or from dead to succeeded (an operator
-- retried it, which resumes the graph below it). Anything else changes
-- nothing. It reports whether the state changed; finish does the rest.
local function wf_note(r, x, id, outcome, result, err)
  local n = wf_node(r, x, true)
  if not n or not (n[1] == WF_STATE.enqueued or (n[1] == WF_STATE.dead and outcome == WF_STATE.succeeded)) then return false end
  local kv = r.kv
  if outcome == WF_STATE.succeeded then
    if result and result ~= '' then kv[#kv + 1], kv[#kv + 2] = WF_FIELD.result .. x, result end
    -- only a dead node has an error to drop
    if n[1] == WF_STATE.dead then r.gone[#r.gone + 1] = WF_FIELD.error .. x end
  else
    kv[#kv + 1], kv[#kv + 2] = WF_FIELD.error .. x, err
    -- a cancelled workflow keeps its reason: its tasks die of the cancel
    if redis.call('HGET', r.W, 'state') ~= 'cancelled' then
      kv[#kv + 1], kv[#kv + 2] = 'why', err
      kv[#kv + 1], kv[#kv + 2] = 'why_node', x
      kv[#kv + 1], kv[#kv + 2] = 'why_id', id
    end
  end
  wf_set(r, x, n, outcome)
  return true
end
