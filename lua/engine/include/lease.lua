--@include limits
--@include keydepth
-- active_add adds leases {deadline, id, ...} to the active set A. A new
-- set is made a skiplist: its first member is longer than 64 bytes,
-- zset-max-listpack-value's default, and leaves in the same call. As a
-- listpack, below 128 members, the set is a list that every lease's insert
-- scans to its end, its deadline being the highest score, and that every
-- ack's removal scans too: a worker with a few dozen tasks in flight spent
-- a tenth of Redis's CPU per task there. Redis 7 keeps a skiplist one as
-- members leave; the set is made again once it empties.
local function active_add(A, leases)
  if redis.call('EXISTS', A) == 1 then
    redis.call('ZADD', A, unpack(leases))
    return
  end
  local pad = string.rep('-', 65)
  redis.call('ZADD', A, 0, pad, unpack(leases))
  redis.call('ZREM', A, pad)
end

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
  local rate = lim.rate
  local leased, extra = {}, {}
  local n = #msgs
  if n == 0 then return leased, extra end
  local statek = T .. ':state'
  -- one string for the batch's shared deadline: a number argument would be
  -- formatted again for every task
  local dl = string.format('%d', deadline)
  local ids, keys, bad = {}, {}, {}
  for i = 1, n do ids[i], keys[i], bad[i] = msg_head(msgs[i]) end
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
    local rec, attempt, token, granted
    if not raws[i] and not (depth_counted and keys[i] ~= '') then
      fresh[key] = fresh[key] or record_pack_active({'active', 1, 1, worker, '', 0, now, 0, 0, key})
      rec, attempt, token = fresh[key], 1, 1
    else
      local r = record_decode(raws[i])
      if r[2] == 0 and depth_counted then keydepth_down(T, keys[i], 1) end -- its first start
      r[1], r[2], r[3], r[4], r[7], r[9], r[10] = 'active', r[2] + 1, r[3] + 1, worker, now, 0, key
      rec, attempt, token, granted = record_pack_active(r), r[2], r[3], r[12]
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
  if running then
    -- the keys' running counts: one read and one write for the batch
    local ks = {}
    for key in pairs(running) do ks[#ks + 1] = key end
    local cur, set = redis.call('HMGET', T .. ':keyactive', unpack(ks)), {}
    for j2, key in ipairs(ks) do
      set[2 * j2 - 1], set[2 * j2] = key, string.format('%d', (tonumber(cur[j2]) or 0) + running[key])
    end
    redis.call('HSET', T .. ':keyactive', unpack(set))
  end
  active_add(T .. ':active', leases)
  if rate > 0 then redis.call('ZADD', T .. ':ratelog', unpack(starts)) end
  return leased, extra
end

-- dequeue_reply leases the messages and returns pop's and claim's reply:
-- {status, aux, now, codes, {messages}, {index, attempt, token, id, granted,
-- ...}}, status POP_OK, or POP_PARKED when none was left to lease (look
-- again at once). Messages with a group that did not come from
-- their keys' turns (fair, false: from the pending list, where a build
-- before fair queues put them) join their keys' tasks instead.
local function dequeue_reply(T, msgs, lim, now, lease, worker, aux, codes, size, fair)
  -- tasks deleted while pending (tomb_pending.lua) are dropped as they are
  -- reached; with none, the common case, this costs one EXISTS
  local dropped = 0
  if #msgs > 0 and redis.call('EXISTS', T .. ':tomb') == 1 then
    local live = {}
    for _, m in ipairs(msgs) do
      local id = msg_head(m)
      if redis.call('SREM', T .. ':tomb', id) == 1 then
        dropped = dropped + 1
        local _, key = msg_head(m)
        local r = record_get(T .. ':state', id)
        if r[2] == 0 then keydepth_down(T, key, 1) end
        redis.call('HDEL', T .. ':state', id)
        redis.call('HDEL', T .. ':msg', id)
        record_forget(T, {id})
      else
        live[#live + 1] = m
      end
    end
    msgs = live
  end
  local keep, parked = msgs, 0
  if not fair then
    keep = fair_route(T, msgs, false, size)
    parked = #msgs - #keep
  end
  local status = POP_OK
  if #keep == 0 and (parked > 0 or dropped > 0) then status = POP_PARKED end
  local leased, extra = lease_tasks(T, keep, now, now + lease, worker, lim)
  return {status, aux, now, codes, leased, extra}
end
