--@include ack_node
-- ack_nodes records in the call a (ack_tasks) that the tasks done[1..n],
-- nodes xs[1..n] of the workflow W, succeeded, as ack_node does for one:
-- an ack of nodes of one workflow (width 3) takes them all in one call,
-- with none per node.
local function ack_nodes(a, W, xs, done, n)
  ack_node(a, W, xs[1], done[1])
  local r, nodes, nn = a.runs[W], a.nodes, a.nn
  local acked, at = r.acked, r.at
  local k = #acked
  for j = 2, n do
    nodes[nn + 1], nodes[nn + 2], nodes[nn + 3] = r, xs[j], done[j]
    nn = nn + 3
    k = k + 1
    acked[k], at[k] = xs[j], nn / 3
  end
  a.nn = nn
end
