--@include wf_effect
-- wf_spread_change tells the children (list cs, spaced) of node x,
-- which moved from state st to new any other way than a success: each
-- child whose parent's effect changes gets a move in the spread a
-- (child, effect before, effect after).
local function wf_spread_change(r, x, st, new, cs, a)
  -- a node that failed or was skipped, and waits or runs again (a retry
  -- above it resumed it), vouches for no child any more: its list is
  -- stored with every edge letter in lower case. Its children heard of
  -- that state, and a child over an EdgeRun edge may have run and
  -- finished: an upper-case letter (x is the child's only parent, so x's
  -- success releases the child unread) no longer says the child waits
  -- for x. Names hold no spaces, so a letter opens the list or follows a
  -- space.
  if OPEN[new] then
    local low, k = string.gsub(' ' .. cs, ' ([FRK])', function(c) return ' ' .. string.lower(c) end)
    if k > 0 then
      low = sub(low, 2)
      local kv = r.kv
      kv[#kv + 1], kv[#kv + 2] = WF_FIELD.children .. x, low
      r.nodes[x][5] = low
    end
  end
  local moves = a.moves
  local p, e = 2, 0
  while e do
    e = find(cs, ' ', p, true)
    local edge = EDGE[sub(cs, p - 1, p - 1)]
    local ea, eb = wf_effect(st, edge), wf_effect(new, edge)
    if ea ~= eb then
      moves[a.m + 1], moves[a.m + 2], moves[a.m + 3] = sub(cs, p, e and e - 1), ea, eb
      a.m = a.m + 3
    end
    if e then p = e + 2 end
  end
end
