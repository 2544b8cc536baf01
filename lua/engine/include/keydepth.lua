-- A group's depth (Limits.GroupMaxDepth, keymaxdepth in T:limits)
-- counts its tasks enqueued and never started: pending, parked for a key's
-- limit or rate, scheduled for their first run. T:kdepth (key -> count) is
-- kept only while the queue has a GroupMaxDepth: enqueue_capped counts a
-- task in, and it is counted out as it first starts (lease_tasks), or is
-- deleted unstarted (a tombstone reached, purge_pending, delete_tasks).
-- Setting the limit to 0 deletes the hash (internal/limits), so counts
-- never go stale across a period without the limit; tasks enqueued before
-- the limit was set are not counted (they are counted out as 0).

-- keydepth_down counts n of key's tasks out, if the key is counted.
local function keydepth_down(T, key, n)
  if key == '' or n <= 0 then return end
  local h = T .. ':kdepth'
  if redis.call('HEXISTS', h, key) == 0 then return end
  if redis.call('HINCRBY', h, key, -n) <= 0 then redis.call('HDEL', h, key) end
end
