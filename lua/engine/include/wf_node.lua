--@include wf_load
-- wf_node returns node x's entry, or nil when W has no such node. With
-- children, a first read takes its children list in the same call, for
-- a node about to change state (wf_set reads it then).
local function wf_node(r, x, children)
  if r.nodes[x] == nil then wf_load(r, {x}, children) end
  return r.nodes[x] or nil
end
