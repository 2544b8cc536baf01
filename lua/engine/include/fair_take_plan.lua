--@include fair_take_load
--@include fair_take_turn
-- FAIR_WINDOW: the most keys of the ring one call reads.
local FAIR_WINDOW = 1000

-- fair_take_plan plans the turns of the call c, from reads alone: in ring
-- order, round after round, until n are taken or max_turns given, over the
-- ring's first n keys (a key taking several turns when there are few),
-- and over more of them while every key read so far has left and fewer
-- than n were taken, up to FAIR_WINDOW keys. It returns whether keys past
-- the window may start: the call ran out of window, not keys.
local function fair_take_plan(c, n, max_turns)
  local queue, want = c.queue, n
  c.more = fair_take_load(c, math.min(n, FAIR_WINDOW))
  while want > 0 and c.nt < max_turns do
    if c.q > #queue then
      -- every key read so far left the ring: read on
      if not c.more or #c.keys >= FAIR_WINDOW then break end
      c.more = fair_take_load(c, math.min(math.max(want, 16), FAIR_WINDOW - #c.keys))
    end
    if c.q <= #queue then
      local i = queue[c.q]
      c.q = c.q + 1
      want = want - fair_take_turn(c, i, want)
    elseif not c.more then
      break
    end
  end
  return want > 0 and c.q > #queue and c.more and #c.keys >= FAIR_WINDOW
end
