--@include fair_layout
--@include fair_plain
--@include turns_reached
--@include turns_trickle
--@include turns_pop_keys
--@include turns_pop_used
--@include turns_pop_touch
-- turns_pop_list takes, in the pop p, up to want tasks from the turn's
-- list: a window of it, as markers and tasks that go to their lists do not
-- count against want; while tasks may go to their lists it reads past
-- them, else markers are few and the next round reads on. A marker
-- brings its key into the ring; a task of a trickling key goes to its
-- key's list. Once the list is done the ring's keys take their turns,
-- "" among them when the pending list has tasks (p.pass). It returns
-- whether the turn is over: its list done and no ring turn left.
local function turns_pop_list(p, want)
  local T, cur = p.T, p.cur
  local list = T .. ':fo:' .. cur
  local window = (p.trickle_all or p.fx) and math.max(want, 128) or want
  local got = redis.call('LRANGE', list, 0, window - 1)
  local keyof, hold = turns_pop_keys(p, got)
  local used = turns_pop_used(p, got, keyof, hold, want)
  turns_pop_touch(p, keyof, hold, used)
  if used > 0 then redis.call('LTRIM', list, used, -1) end
  p.popped = p.popped + used
  for i = 1, used do
    local v = got[i]
    if string.byte(v, 1) == 0 then -- a marker ('\0')
      turns_reached(T, string.sub(v, 2), cur)
    elseif keyof[i] and (p.trickle_all or hold[keyof[i]]) then
      turns_trickle(T, keyof[i], v, cur, p.popped)
    else
      p.out[#p.out + 1] = v
      p.taken = p.taken + 1
    end
  end
  if used == #got and #got < window then
    fair_plain(T, p.size)
    p.pass = redis.call('LLEN', T .. ':fr')
    if p.pass == 0 then return true end
  end
  return false
end
