--@include codes
--@include fair_layout
--@include fair_take
--@include turns_get
--@include turns_put
--@include turns_pop_ring
--@include turns_pop_list
--@include turns_pop_next
-- fair_pop takes up to n messages, turn by turn: each turn gives the
-- tasks placed in it (turns_pop_list), then one turn to each key of the
-- ring (fair_take); with nothing placed, the ring alone. A placed task of
-- a key in T:fx, and every placed task under a key limit, goes to its
-- key's list instead (turns_trickle); a marker brings its key into the
-- ring. It returns the messages, the ms until a key waiting for its
-- GroupRate may start again (NONE: none waits), and whether keys the call
-- did not reach may start now.
local function fair_pop(T, n, lim, now, size)
  local cur, popped, pass, live = turns_get(T)
  if not live then
    local out, wait, unreached = fair_take(T, n, lim, now, size, math.huge, {})
    return out, wait, unreached
  end
  -- on a slot that migrates, a structure moved away fails the call here,
  -- before any write
  redis.call('EXISTS', T .. ':fa', T .. ':fe', T .. ':fx', T .. ':fk', T .. ':fz',
    T .. ':fl', T .. ':fr', T .. ':fn', T .. ':fh', T .. ':fp',
    T .. ':fo:' .. cur, T .. ':fo:' .. (cur + 1))
  local trickle_all = lim.keyconc > 0 or lim.keyrate > 0
  -- the pop's state, which its helpers share
  local p = {T = T, lim = lim, now = now, size = size, cur = cur, popped = popped, pass = pass,
    live = live, trickle_all = trickle_all, fx = not trickle_all and redis.call('EXISTS', T .. ':fx') == 1,
    out = {}, wait = NONE, unreached = false, taken = 0, leased = {}}
  local rounds = 0
  while n - #p.out > 0 do
    rounds = rounds + 1
    if rounds > 64 then
      -- bounded work per call: the caller looks again at once
      p.unreached = true
      break
    end
    local done = false -- the turn is over: its list and its ring turns
    if p.pass == 0 then done = turns_pop_list(p, n - #p.out) end
    if p.pass > 0 and n - #p.out > 0 then
      local w = n - #p.out
      local got, nt = turns_pop_ring(p, w, p.pass)
      p.pass = p.pass - nt
      if got < w or p.pass <= 0 then done = true end
    end
    if done and turns_pop_next(p, n) then break end
  end
  if p.taken > 0 then redis.call('INCRBY', T .. ':fn', -p.taken) end
  if p.live then turns_put(T, p.cur, p.popped, p.pass) end
  return p.out, p.wait, p.unreached
end
