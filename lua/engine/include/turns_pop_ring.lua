--@include codes
--@include fair_take
-- turns_pop_ring gives up to turns turns of the ring (fair_take) in the
-- pop p, wanting want tasks: their messages join p.out. It returns how
-- many it took and the turns it gave.
local function turns_pop_ring(p, want, turns)
  local msgs, due, unr, nt = fair_take(p.T, want, p.lim, p.now, p.size, turns, p.leased)
  for _, m in ipairs(msgs) do p.out[#p.out + 1] = m end
  if due ~= NONE and (p.wait == NONE or due < p.wait) then p.wait = due end
  p.unreached = p.unreached or unr
  return #msgs, nt
end
