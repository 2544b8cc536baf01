-- wf_spread_success tells, in one call, the children of the nodes in fan
-- (as wf_spread has it) that succeeded from enqueued, the common case:
-- each child loses an unfinished parent whatever its edge. A child of
-- one alone (an upper-case edge letter, trusted when r.sole) is released
-- unread; the others are counted in the spread a (dec, per child; named,
-- in order). It reports whether fan holds any other change.
local function wf_spread_success(r, fan, a)
  local nodes, rel, dec, named = r.nodes, r.rel, a.dec, a.named
  local join, joins, solo, succeeded = r.join, r.joins, r.sole, WF_STATE.succeeded
  local nd, nrel, freed, other = a.nd, #rel, a.freed, false
  for i = 1, #fan, 4 do
    local x, cs = fan[i], fan[i + 3]
    if not (OPEN[fan[i + 1]] and fan[i + 2] == succeeded) then
      other = true
    else
      cs = cs and wf_kids(cs)
      for pass = 1, 2 do
        -- its list, then the join nodes, which no list names
        if pass == 2 then cs = join and not joins[x] and join end
        -- each child: its name from p to the space at e (none: the
        -- end), its edge's letter before p
        local p, e = 2, cs and 0
        while e do
          e = find(cs, ' ', p, true)
          local c = sub(cs, p, e and e - 1)
          if solo and byte(cs, p - 1) < 0x61 and nodes[c] == nil then
            -- c's only parent succeeded: c waits for it alone, so c is
            -- released, with no read of its state
            nodes[c] = RELEASED
            nrel = nrel + 1
            rel[nrel] = c
            freed = freed + 1
          else
            local d = dec[c]
            if d then
              dec[c] = d + 1
            else
              dec[c] = 1
              nd = nd + 1
              named[nd] = c
            end
          end
          if e then p = e + 2 end
        end
      end
    end
  end
  a.nd, a.freed = nd, freed
  return other
end
