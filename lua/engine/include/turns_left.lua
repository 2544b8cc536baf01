-- turns_left reports whether a placed task at turn r, position p, was not
-- taken yet.
local function turns_left(r, p, cur, popped)
  return r > cur or (r == cur and p > popped)
end
