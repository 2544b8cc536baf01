-- rank_closed reports whether a rank counter's value (GET's reply) marks
-- its partition closed.
local function rank_closed(v)
  return v ~= false and v ~= nil and string.sub(v, 1, 7) == 'closed:'
end
