--@include wf_effect
--@include wf_unvouch
-- wf_spread_change tells the children (list cs, spaced) of node x,
-- which moved from state st to new any other way than a success: each
-- child whose parent's effect changes gets a move in the spread a
-- (child, effect before, effect after).
local function wf_spread_change(r, x, st, new, cs, a)
  -- a node that failed or was skipped, and waits or runs again (a retry
  -- above it resumed it), vouches for no child any more
  if OPEN[new] then wf_unvouch(r, x, cs) end
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
