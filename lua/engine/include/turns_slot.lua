-- turns_slot appends m to the list the placement p builds for turn r, and
-- returns its position there (p.torder: the turns in the order first
-- used).
local function turns_slot(p, r, m)
  local list = p.turns[r]
  if not list then
    list = {}
    p.turns[r] = list
    p.torder[#p.torder + 1] = r
  end
  list[#list + 1] = m
  return #list
end
