--@include turns_left
-- turns_pack encodes a record (turns_rec), keeping the positions of tasks
-- not taken.
local function turns_pack(a, cur, popped)
  local parts = {string.format('%d %d %d %d', a.lr, a.fill, a.t, a.mk and 1 or 0)}
  for _, e in ipairs(a.pos) do
    if turns_left(e[1], e[2], cur, popped) then parts[#parts + 1] = string.format('%d:%d', e[1], e[2]) end
  end
  return table.concat(parts, ' ')
end
