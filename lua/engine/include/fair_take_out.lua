-- fair_take_out returns the messages the plan c took, in the order of
-- the turns that took them.
local function fair_take_out(c)
  local out, no = {}, 0
  for x = 1, c.nt do
    local k = c.ks[c.turns[x]]
    local items = k.items
    for _ = 1, c.turnn[x] do
      local m = items and items[k.next]
      if m then
        no = no + 1
        out[no] = m
      end
      k.next = k.next + 1
    end
  end
  return out
end
