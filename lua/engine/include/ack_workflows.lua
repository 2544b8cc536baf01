--@include wf_run_lib
-- ack_workflows applies the workflow nodes the call a acked (ack_node):
-- it reads their results in one HMGET, gives each run its acked nodes
-- (wf.acked), then finishes the runs in the order of the acks.
local function ack_workflows(a)
  local wf = wf_run_lib()
  local nodes, nn = a.nodes, a.nn
  local ids = {}
  for k = 3, nn, 3 do ids[k / 3] = nodes[k] end
  local results = redis.call('HMGET', a.T .. ':result', unpack(ids))
  for _, r in pairs(a.runs) do wf.acked(r, ids, results) end
  -- in the order of the acks, as they came
  for k = 1, nn, 3 do
    local r = nodes[k]
    if r.acked then
      r.acked = nil
      wf.finish(r)
    end
  end
end
