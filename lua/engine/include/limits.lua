--@include codes
--@include sharded
--@include msg_head
--@include record
--@include fair
-- Limits of a partition T, kept in T:limits so a change applies at the next
-- dequeue: concurrency (tasks running at once: the fair semaphore over
-- T:active), rate and per (task starts per period, counted in T:ratelog),
-- keyconc (tasks of one group running at once), keyrate (task
-- starts of one group per period, see include/keyrate.lua).
-- 0 = none.
--
-- A queue of several partitions with a concurrency or rate limit keeps the
-- limit fleet-wide: its capacity is split into per-partition quotas (cq,
-- rq), moved to where the demand is by quota rebalances (quota_*.lua). A
-- quota may be 0: nothing may start here now. It returns concurrency and
-- rate as NONE for no limit, since 0 is a limit then.
local function limits_get(T)
  local v = redis.call('HMGET', T .. ':limits', 'concurrency', 'rate', 'per', 'keyconc', 'keyrate', 'cq', 'rq')
  local conc, rate = tonumber(v[1]) or 0, tonumber(v[2]) or 0
  if conc <= 0 then conc = NONE end
  if rate <= 0 then rate = NONE end
  if v[6] then conc = tonumber(v[6]) end
  if v[7] then rate = tonumber(v[7]) end
  return conc, rate, tonumber(v[3]) or 1000, tonumber(v[4]) or 0, tonumber(v[5]) or 0
end

-- keys_release: tasks of the keys of n (key -> tasks) stopped running.
-- Count them down; a key that was at its GroupConcurrency takes its turns
-- again (include/fair.lua). A batch's keys cost a few calls in all, not
-- a few per task.
local function keys_release(T, n, size)
  local ks = {}
  for key in pairs(n) do ks[#ks + 1] = key end
  if #ks == 0 then return end
  local running = redis.call('HMGET', T .. ':keyactive', unpack(ks))
  local set, del = {}, {}
  for i, key in ipairs(ks) do
    local left = (tonumber(running[i]) or 0) - n[key]
    if left > 0 then
      set[#set + 1] = key
      set[#set + 1] = left
    else
      del[#del + 1] = key
    end
  end
  if #set > 0 then redis.call('HSET', T .. ':keyactive', unpack(set)) end
  if #del > 0 then redis.call('HDEL', T .. ':keyactive', unpack(del)) end
  local recs = redis.call('HMGET', T .. FAIR.lists, unpack(ks))
  for i, key in ipairs(ks) do
    if recs[i] and string.sub(recs[i], -1) == 'b' then fair_release(T, key) end
  end
  -- a task parked by a build before fair queues joins its key's tasks
  if redis.call('EXISTS', T .. ':parked') == 0 then return end
  for _, key in ipairs(ks) do
    local m = redis.call('LPOP', T .. ':k:' .. key)
    if m then
      if redis.call('HINCRBY', T .. ':keywait', key, -1) <= 0 then
        redis.call('HDEL', T .. ':keywait', key)
      end
      if redis.call('DECR', T .. ':parked') <= 0 then redis.call('DEL', T .. ':parked') end
      turns_lib().push(T, key, {m}, true, size)
    end
  end
end

-- key_release: a task of key stopped running (keys_release of one).
local function key_release(T, key, size)
  if key == nil or key == '' then return end
  keys_release(T, {[key] = 1}, size)
end

-- requeue_expired gives up to max tasks whose lease expired back to the
-- head of the pending list (their attempt stays counted) and returns how
-- many.
local function requeue_expired(T, now, max, size)
  local active, msgk, statek = T .. ':active', T .. ':msg', T .. ':state'
  local ids = redis.call('ZRANGE', active, '-inf', now, 'BYSCORE', 'LIMIT', 0, max)
  local back = {}
  for _, id in ipairs(ids) do
    local m = redis.call('HGET', msgk, id)
    redis.call('ZREM', active, id)
    if m then
      local r = record_get(statek, id)
      local key = r[10]
      r[1], r[4], r[5], r[10] = 'pending', '', 'lease expired (worker crashed or stalled)', ''
      record_put(statek, id, r) -- the message stays in T:msg, for inspectors
      back[#back + 1] = m
      key_release(T, key, size)
    end
  end
  local n = #back
  back = fair_route(T, back, true, size)
  if #back > 0 then sharded_push(T .. ':first', T .. ':last', T .. ':s:', size, back, true) end
  return n
end

-- rate_room returns how many more tasks may start now under the rate
-- limit, or 0 and the ms until one may.
local function rate_room(T, rate, per, now)
  local log = T .. ':ratelog'
  redis.call('ZREMRANGEBYSCORE', log, '-inf', now - per)
  local used = redis.call('ZCARD', log)
  if used < rate then return rate - used, 0 end
  local oldest = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
  return 0, math.max(1, tonumber(oldest[2]) + per - now)
end

-- NO_LIMITS is what dequeue_room's callers use when T has no limits hash.
local NO_LIMITS = {conc = 0, rate = 0, keyconc = 0, keyrate = 0, per = 1000}

-- dequeue_room applies the partition's limits to a wish for n tasks. It
-- returns how many may start, a status when none may (POP_FULL at the
-- concurrency limit, POP_RATE at the rate limit), the ms to wait, and the limits
-- it read, for the rest of the call.
local function dequeue_room(T, n, now, size)
  local conc, rate, per, keyconc, keyrate = limits_get(T)
  local lim = {conc = math.max(conc, 0), rate = math.max(rate, 0), keyconc = keyconc, keyrate = keyrate, per = per}
  if conc >= 0 then
    local active = T .. ':active'
    if redis.call('ZCARD', active) >= conc then
      -- a crashed holder's slot comes back with its lease, at once
      requeue_expired(T, now, conc, size)
    end
    n = math.min(n, conc - redis.call('ZCARD', active))
    if n <= 0 then return 0, POP_FULL, 0, lim end
  end
  if rate == 0 then return 0, POP_RATE, math.min(per, 250), lim end -- a rate quota of 0: look again soon
  if rate > 0 then
    local room, wait = rate_room(T, rate, per, now)
    if room == 0 then return 0, POP_RATE, wait, lim end
    n = math.min(n, room)
  end
  return n, POP_OK, 0, lim
end
