--@include codes
--@include msg_head
--@include sharded
--@include fair_layout
--@include fair_get
--@include fair_set
--@include fair_due
--@include fair_read
--@include fair_plain_count
--@include fair_plain
-- fair_route is defined in include/fair_route.lua, which routes tasks to
-- turns or keys' lists and needs this file's function; the take routes
-- the keyed tasks an older producer left in the pending list with it.
local fair_route

-- fair_take takes up to n messages, turn by turn: each key of the ring
-- in order gives up to its weight (the head what is left of its turn),
-- within its GroupConcurrency and GroupRate, then waits for its next turn at
-- the ring's tail; "" gives the tasks of the partition's pending list. A
-- key that may not start leaves the ring. The turns of one call are
-- planned first, from reads alone (fair_take_plan); then the shards the
-- plan takes from are touched (fair_take_touch), so on a slot that
-- migrates a key already moved away stops the script before anything was
-- taken; then the plan is carried out (fair_take_write, fair_take_ring).
-- It returns the messages, the ms until a key waiting for its GroupRate may
-- start again (NONE: none waits), whether keys the call did not reach may
-- start now (the caller looks again at once), and how many turns it gave.
-- It gives at most max_turns turns; leased (key -> tasks) holds the tasks
-- of keys taken earlier in the same call, which their GroupConcurrency
-- counts, and gets this call's.
--
-- Its helpers are defined inside it, where their files are included: each
-- helper is a closure made per call of the code that defines it, and a
-- plain pop never takes a turn.
local function fair_take(T, n, lim, now, size, max_turns, leased)
  --@include fair_take_limits
  --@include fair_take_load
  --@include fair_take_turn
  --@include fair_take_plan
  --@include fair_take_touch
  --@include fair_take_plain
  --@include fair_take_key
  --@include fair_take_write
  --@include fair_take_out
  --@include fair_take_ring
  -- the call's state, which the helpers share: ks[i] is the i-th key read
  -- from the ring (keys[i] its name), queue the indexes of keys in the
  -- order of their turns, turns and turnn each turn's key and tasks
  local c = {T = T, lim = lim, now = now, size = size, leased = leased, wait = NONE,
    turn_key = nil, turn_left = 0, plain_first = 0, plain_last = 0,
    ks = {}, keys = {}, queue = {}, q = 1, more = false, visited = {},
    turns = {}, turnn = {}, nt = 0, head = nil}
  if redis.call('EXISTS', T .. ':fd') == 1 then c.wait = fair_due(T, now) end
  fair_plain(T, size)
  local turn = redis.call('GET', T .. ':ft')
  if turn then
    local k, key = string.match(turn, '^(%d+) (.*)$')
    c.turn_left, c.turn_key = tonumber(k), key
  end
  c.plain_first, c.plain_last = shard_bounds(T .. ':first', T .. ':last')
  local unreached = fair_take_plan(c, n, max_turns)
  if #c.keys == 0 then return {}, c.wait, false, 0 end
  fair_take_touch(c)
  fair_take_write(c)
  local out = fair_take_out(c)
  fair_take_ring(c)
  return out, c.wait, unreached, c.nt
end
