--@include wf_load
-- wf_spread_apply applies the spread a to the children it names: the
-- counted ones, read together, each take their decrements at once, and
-- a waiting one is queued for evaluation only when it may leave waiting
-- (its last unfinished parent gone); each moved one takes its move and
-- is queued.
local function wf_spread_apply(r, a)
  local nodes, work, order, dec, named, moves = r.nodes, r.work, r.order, a.dec, a.named, a.moves
  wf_load(r, named, false, 1, a.nd)
  local w, o, waiting = #work, #order, WF_STATE.waiting
  for k = 1, a.nd do
    local x = named[k]
    local c = nodes[x]
    if c and WAITS[c[1]] then
      c[2] = c[2] - dec[x]
      if not c[7] then
        c[7] = true
        o = o + 1
        order[o] = x
      end
      if c[2] <= 0 or c[1] ~= waiting then
        w = w + 1
        work[w] = x
      end
    end
  end
  wf_load(r, moves, false, 1, a.m, 3)
  for i = 1, a.m, 3 do
    local x = moves[i]
    local c = nodes[x]
    if c and WAITS[c[1]] then
      local ea, eb = moves[i + 1], moves[i + 2]
      local count = wf_more().count
      count(c, ea, -1)
      count(c, eb, 1)
      if not c[7] then
        c[7] = true
        o = o + 1
        order[o] = x
      end
      w = w + 1
      work[w] = x
    end
  end
end
