--@include wf_sole
-- wf_spread_success tells the children (list cs, spaced) of a node that
-- succeeded from enqueued, the common case: each child loses an
-- unfinished parent whatever its edge, and nothing else changes. A
-- child of it alone (an upper-case edge letter, unless wf_sole says
-- otherwise) is released with no read of its state; the others are
-- counted in the spread a (dec, per child; named, in order).
local function wf_spread_success(r, cs, a)
  local nodes, rel, dec, named = r.nodes, r.rel, a.dec, a.named
  -- each child: its name from p to the space at e (none: the end), its
  -- edge's letter before p
  local p, e = 2, 0
  while e do
    e = find(cs, ' ', p, true)
    local x = sub(cs, p, e and e - 1)
    local up = byte(cs, p - 1) < 0x61 and nodes[x] == nil
    if up and a.solo == nil then a.solo = wf_sole(r) end
    if up and a.solo then
      -- x's only parent succeeded: x waits for it alone, so x is
      -- released, with no read of its state
      nodes[x] = RELEASED
      a.nrel = a.nrel + 1
      rel[a.nrel] = x
      a.freed = a.freed + 1
    else
      local d = dec[x]
      if d then
        dec[x] = d + 1
      else
        dec[x] = 1
        a.nd = a.nd + 1
        named[a.nd] = x
      end
    end
    if e then p = e + 2 end
  end
end
