-- wf_extend_edges checks the edges of an extension's nodes against run
-- r's workflow and returns nil, the children each parent gains (adds:
-- parent -> {{child, edge, letter}, ...}, new or existing parents), the
-- count of edges and whether a new node became the parent of an
-- existing one (queue.Before); or the refusal: FLOW_UNKNOWN_PARENT, or
-- FLOW_NOT_WAITING for an existing child that no longer waits.
local function wf_extend_edges(r, nodes, new)
  local wf = wf_lib()
  local adds, edges, before = {}, 0, false
  local function add(p, child, e, letter)
    local list = adds[p]
    if not list then
      list = {}
      adds[p] = list
    end
    -- the edge's letter in the children list: upper case when p is
    -- child's only parent (include/wf_names.lua)
    list[#list + 1] = {child, e, letter or e}
    edges = edges + 1
  end
  for _, nd in ipairs(nodes) do
    for _, pe in ipairs(nd.parents) do
      if not new[pe[1]] and not wf.node(r, pe[1]) then
        return {FLOW_UNKNOWN_PARENT, nd.name, pe[1]}
      end
      add(pe[1], nd.name, pe[2], #nd.parents == 1 and string.upper(pe[2]))
    end
    for _, ce in ipairs(nd.before) do
      local c = wf.node(r, ce[1])
      if not c then return {FLOW_UNKNOWN_PARENT, nd.name, ce[1]} end
      if c[1] ~= 'w' then return {FLOW_NOT_WAITING, nd.name, ce[1]} end
      add(nd.name, ce[1], ce[2])
      before = true
    end
  end
  return nil, adds, edges, before
end
