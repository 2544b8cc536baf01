-- bytes_less reports whether string a sorts before b byte by byte, the order
-- Redis gives members of equal score. Lua's own < follows the server's
-- locale (strcoll), which need not be byte order.
local function bytes_less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
