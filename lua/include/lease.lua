--@include msgid
--@include record
-- lease_tasks leases each message until deadline: its record becomes
-- active with one more attempt and a new fencing token, its message moves to
-- T:msg and its ID to T:active. It returns {id, message, attempt, token, ...}.
local function lease_tasks(active_key, msg_key, state_key, msgs, now, deadline, worker)
  local out = {}
  for _, m in ipairs(msgs) do
    local id = msg_id(m)
    local r = record_get(state_key, id)
    r[1], r[2], r[3], r[4], r[7], r[9] = 'active', r[2] + 1, r[3] + 1, worker, now, 0
    record_put(state_key, id, r)
    redis.call('HSET', msg_key, id, m)
    redis.call('ZADD', active_key, deadline, id)
    out[#out + 1] = id
    out[#out + 1] = m
    out[#out + 1] = r[2]
    out[#out + 1] = r[3]
  end
  return out
end

-- lease_room returns how many more tasks may be leased under limit (0 =
-- none): the queue's fair semaphore is T:active itself.
local function lease_room(active_key, want, limit)
  if limit <= 0 then return want end
  return math.max(0, math.min(want, limit - redis.call('ZCARD', active_key)))
end
