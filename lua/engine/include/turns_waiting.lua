--@include turns_left
-- turns_waiting counts a record's placed tasks not taken yet.
local function turns_waiting(a, cur, popped)
  local n = 0
  for _, e in ipairs(a.pos) do
    if turns_left(e[1], e[2], cur, popped) then n = n + 1 end
  end
  return n
end
