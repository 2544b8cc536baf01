-- turns_pop_used returns how many of the items got from the turn's list
-- the pop p takes: up to want tasks that start; markers and tasks that go
-- to their keys' lists do not count.
local function turns_pop_used(p, got, keyof, hold, want)
  local used, starts = 0, 0
  for i, v in ipairs(got) do
    if starts >= want then break end
    used = i
    if string.byte(v, 1) ~= 0 and not (keyof[i] and (p.trickle_all or hold[keyof[i]])) then starts = starts + 1 end
  end
  return used
end
