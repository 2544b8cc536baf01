--@include wf_stored_kids
-- wf_cycle refuses with FLOW_CYCLE an edge of an extension into an
-- existing node that reaches the edge's new parent: it searches below
-- that node, through W's stored children and this call's (adds). Only
-- edges into existing nodes (queue.Before) can close a cycle.
local function wf_cycle(W, nodes, new, adds, stored)
  local function children_of(x)
    local out = {}
    if not new[x] then
      for ch in string.gmatch(wf_stored_kids(W, x, stored) or '', '%S(%S+)') do out[#out + 1] = ch end
    end
    for _, ch in ipairs(adds[x] or {}) do out[#out + 1] = ch[1] end
    return out
  end
  for _, nd in ipairs(nodes) do
    for _, ce in ipairs(nd.before) do
      local seen, stack = {[ce[1]] = true}, {ce[1]}
      while #stack > 0 do
        local x = table.remove(stack)
        for _, c in ipairs(children_of(x)) do
          if c == nd.name then return {FLOW_CYCLE, nd.name, ce[1]} end
          if not seen[c] then
            seen[c] = true
            stack[#stack + 1] = c
          end
        end
      end
    end
  end
  return nil
end
