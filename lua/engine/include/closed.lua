-- A closed partition (its queue's partition count was lowered: it drains
-- and takes no new task) is marked in its rank counter, T:feed:rank, which
-- then holds "closed:<count>" (partition_state.lua writes and clears it).
-- The mark is the only record of the state: every enqueue path reads the
-- counter anyway, and INCR refuses a counter that is not an integer, so
-- the single enqueue (enqueue_one.lua) needs no check of its own.

-- rank_closed reports whether a rank counter's value (GET's reply) marks
-- its partition closed.
local function rank_closed(v)
  return v ~= false and v ~= nil and string.sub(v, 1, 7) == 'closed:'
end

-- rank_count returns the count a rank counter's value holds, marked or not
-- (0 when missing).
local function rank_count(v)
  if not v then return 0 end
  return tonumber(string.match(v, '(%d+)$')) or 0
end
