--@include fair_layout
--@include sharded
-- fair_take_plain takes the tasks the plan c gave "" (k) from the
-- partition's pending list; "" leaves the ring once that list is empty.
local function fair_take_plain(c, k)
  local T = c.T
  if k.took > 0 then
    local items = sharded_pop(T .. ':first', T .. ':last', T .. ':s:', k.took, true)
    -- a task with a key in the pending list (enqueued by an older
    -- producer) joins its key's tasks instead
    k.items = fair_route(T, items, false, c.size)
    local f, l = shard_bounds(T .. ':first', T .. ':last')
    if f == l and redis.call('LLEN', T .. ':s:' .. f) == 0 then k.fate = 'gone' end
  end
  if k.fate == 'gone' then redis.call('DEL', T .. ':fs') end
end
