-- rank_count returns the count a rank counter's value holds, marked or not
-- (0 when missing).
local function rank_count(v)
  if not v then return 0 end
  return tonumber(string.match(v, '(%d+)$')) or 0
end
