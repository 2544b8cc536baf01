--@include msgpack_short_head
--@include msg_head
--@include active_add
--@include lease_record
--@include lease_running
-- lease_tasks leases each message until deadline: its record becomes
-- active with one more attempt and a new fencing token; its message moves
-- to T:msg, its ID to T:active, and a rate-limited partition logs the
-- start. Under a GroupConcurrency (lim.keyconc) the record also names the
-- task's group and the key's running count goes up; without one
-- nothing counts a key's running tasks, so a keyed task's lease costs what
-- a plain one's does (Inspector.Keys counts them from T:active). Reads and
-- writes are one variadic call each for the whole batch. It returns the
-- leased messages and, for each whose attempt and token are not 1 (it ran
-- before) or whose ID is not the one it opens with (a "bad:" ID), {index
-- among them, attempt, token, ID or "", attempts granted by operators}: a
-- first lease, the common case, costs the reply one value, and the worker
-- reads its ID in the message.
local function lease_tasks(T, msgs, now, deadline, worker, lim)
  local rate, leased, extra, n = lim.rate, {}, {}, #msgs
  if n == 0 then return leased, extra end
  local statek = T .. ':state'
  -- one string for the batch's shared deadline: a number argument would be
  -- formatted again for every task
  local dl = string.format('%d', deadline)
  local ids, keys, bad = {}, {}, {}
  for i = 1, n do
    -- the short head, the common case, with no call into msg_head
    local m, last = msgs[i], msgpack_short_head(msgs[i])
    if last then ids[i], keys[i] = string.sub(m, 3, last), '' else ids[i], keys[i], bad[i] = msg_head(m) end
  end
  -- the key each lease counts against: none without a GroupConcurrency
  local lease_keys = lim.keyconc > 0 and keys or {}
  -- GroupMaxDepth counts keyed tasks until their first start: one EXISTS a
  -- batch tells whether any is counted
  local depth_counted = redis.call('EXISTS', T .. ':kdepth') == 1
  local raws = redis.call('HMGET', statek, unpack(ids))
  -- the first leases of one key (or of none) get the same record: packed
  -- once per batch
  local fresh, running = {}, nil
  local states, bodies, leases, starts = {}, {}, {}, {}
  local j, e = 0, 0
  for i = 1, n do
    local id, key, m = ids[i], lease_keys[i] or '', msgs[i]
    -- a first lease whose record this batch packed already, the common
    -- case, takes it with no call
    local rec, attempt, token, granted = fresh[key], 1, 1, nil
    if not rec or raws[i] or (depth_counted and keys[i] ~= '') then
      rec, attempt, token, granted = lease_record(T, raws[i], key, keys[i], depth_counted, fresh, worker, now)
    end
    if key ~= '' then
      running = running or {}
      running[key] = (running[key] or 0) + 1
    end
    states[j + 1], states[j + 2] = id, rec
    bodies[j + 1], bodies[j + 2] = id, m
    leases[j + 1], leases[j + 2] = dl, id
    j = j + 2
    if rate > 0 then
      starts[#starts + 1] = now
      starts[#starts + 1] = id .. ':' .. token
    end
    leased[i] = m
    if token ~= 1 or attempt ~= 1 or bad[i] then
      extra[e + 1], extra[e + 2], extra[e + 3], extra[e + 4] = i, attempt, token, bad[i] and id or ''
      extra[e + 5] = granted or 0
      e = e + 5
    end
  end
  redis.call('HSET', statek, unpack(states))
  redis.call('HSET', T .. ':msg', unpack(bodies))
  -- the keys' running counts: one read and one write for the batch
  if running then lease_running(T, running) end
  active_add(T .. ':active', leases)
  if rate > 0 then redis.call('ZADD', T .. ':ratelog', unpack(starts)) end
  return leased, extra
end
