--@include fair_layout
--@include turns_clean
--@include turns_pop_ring
-- turns_pop_next ends the pop p's turn: it moves to the next turn when
-- that holds placed tasks, dropping the records of keys whose last one was
-- in the turn left. When nothing placed waits, the ring alone serves the
-- rest of the n wanted, T:fi goes once no record is left, and it returns
-- true: the pop is done.
local function turns_pop_next(p, n)
  local T = p.T
  p.pass = 0
  if redis.call('EXISTS', T .. ':fo:' .. (p.cur + 1)) == 1 then
    turns_clean(T, p.cur)
    p.cur, p.popped = p.cur + 1, 0
  elseif redis.call('EXISTS', T .. ':fo:' .. p.cur) == 0 then
    -- nothing placed waits: the ring alone, as before any was
    if not turns_clean(T, p.cur) and redis.call('EXISTS', T .. ':fe') == 0 then
      redis.call('DEL', T .. ':fi')
      p.live = false
    end
    if n - #p.out > 0 then turns_pop_ring(p, n - #p.out, math.huge) end
    return true
  end
  return false
end
