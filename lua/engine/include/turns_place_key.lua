--@include fair_layout
--@include turns_rec
--@include turns_slot
-- TURNS_AHEAD: how many turns ahead of the turn now a key's tasks are
-- placed; the rest wait in its list, behind its marker.
local TURNS_AHEAD = 16

-- turns_place_key plans, in the placement p, the turns of the tasks of key
-- (bykey[key]; rec its T:fa record, w its weight, base the first turn a
-- task may go to): it fills the turns from its last one, up to w per turn
-- and TURNS_AHEAD turns ahead, and leaves the rest in bykey[key], behind
-- a marker.
local function turns_place_key(p, key, bykey, rec, w, base)
  local a = turns_rec(rec) or {lr = 0, fill = 0, t = -1, mk = false, pos = {}}
  if a.lr < base or not rec then a.lr, a.fill = base - 1, w end
  local msgs, i = bykey[key], 1
  while i <= #msgs do
    local r = a.fill < w and a.lr or a.lr + 1
    if r >= base + TURNS_AHEAD then break end
    if r ~= a.lr then a.lr, a.fill = r, 0 end
    a.fill = a.fill + 1
    a.pos[#a.pos + 1] = {r, turns_slot(p, r, msgs[i]), true}
    i = i + 1
  end
  if i == 1 then return end
  a.mk = false -- a marker of an earlier placement is stale now
  p.total = p.total + i - 1
  local rest = {}
  for x = i, #msgs do rest[#rest + 1] = msgs[x] end
  bykey[key] = rest
  p.placed[#p.placed + 1] = {key, a, #rest}
  if #rest > 0 then
    turns_slot(p, a.lr, '\0' .. key)
    a.mk = true
  end
end
