-- feed_trim_step is how many ranks pass between two trims of a feed of
-- capacity cap: a trim costs up to seven commands (with the message copies
-- and the pending index), so a busy feed trims once per step appends, a
-- sixteenth of its cap and at most 256 (0.03 commands per single enqueue at
-- the default 10,000), and holds at most cap + step - 1 members meanwhile.
-- A small feed trims at every append. enqueue_one.lua repeats this
-- formula inline, before any include: change both together.
local function feed_trim_step(cap)
  return math.max(1, math.min(256, math.floor(cap / 16)))
end
