-- wf_join_add counts, in run r, n new parents of each join node of list
-- (include/wf_joined.lua): they have no edge stored.
local function wf_join_add(r, list, n)
  local wf = wf_lib()
  for x in string.gmatch(list, '%S(%S+)') do
    wf.count(wf.node(r, x), 'u', n)
    wf.dirty(r, x)
  end
end
