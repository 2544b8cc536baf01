-- wf_dirty marks node x of run r changed: wf_flush writes its state.
local function wf_dirty(r, x)
  local n = r.nodes[x]
  if not n[7] then
    n[7] = true
    r.order[#r.order + 1] = x
  end
end
