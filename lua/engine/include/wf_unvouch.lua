-- wf_unvouch stores node x's children list cs (spaced) with every edge
-- letter in lower case, once x left failed or skipped to wait or run
-- again. Its children heard of that state, and a child over an EdgeRun
-- edge may have run and finished: an upper-case letter (x is the
-- child's only parent, so x's success releases the child unread) no
-- longer says the child waits for x. Names hold no spaces, so a letter
-- is what opens the list or follows a space.
local function wf_unvouch(r, x, cs)
  local low, k = string.gsub(' ' .. cs, ' ([FRK])', function(c) return ' ' .. string.lower(c) end)
  if k == 0 then return end
  low = sub(low, 2)
  local kv = r.kv
  kv[#kv + 1], kv[#kv + 2] = WF_FIELD.children .. x, low
  r.nodes[x][5] = low
end
