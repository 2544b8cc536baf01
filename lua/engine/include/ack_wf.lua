--@include wf_run_lib
-- ack_wf returns the helpers of an ack of workflow nodes (ACK_WF: node,
-- nodes, workflows; each in its file ack_<name>), made by the first call
-- that needs them, as ack_lib makes the others: an ack of nodes of one
-- workflow (width 3) takes these alone.
local ACK_WF -- the helpers, once made

local function ack_wf()
  if ACK_WF then return ACK_WF end
  --@include ack_node
  --@include ack_nodes
  --@include ack_workflows
  ACK_WF = {node = ack_node, nodes = ack_nodes, workflows = ack_workflows}
  return ACK_WF
end
