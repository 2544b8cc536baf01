--@include wf_run_lib
-- ack_node records in the call a (ack_tasks) that task id, node x of the
-- workflow W, succeeded: W's run, started once per call, goes to a.runs
-- (W -> run) and gets x in its acked nodes; the run, x and id go to
-- a.nodes (a.nn values), for ack_workflows, which reads the nodes'
-- results with the others.
local function ack_node(a, W, x, id)
  if not a.runs then a.runs, a.nodes, a.nn = {}, {}, 0 end
  local r = a.runs[W]
  if not r then
    r = wf_run_lib().start(string.match(W, '^(.*}):w:'), W, a.now)
    a.runs[W] = r
    r.acked, r.at = {}, {}
  end
  local nodes, nn = a.nodes, a.nn
  nodes[nn + 1], nodes[nn + 2], nodes[nn + 3] = r, x, id
  nn = nn + 3
  a.nn = nn
  -- no count of its own in r, whose fields stay within the 32 its hash
  -- part holds with no rehash
  local k = #r.acked + 1
  r.acked[k], r.at[k] = x, nn / 3
end
