--@include limits
-- lease_tasks leases each message until deadline: its record becomes
-- active with one more attempt, a new fencing token and its concurrency
-- key; its message moves to T:msg, its ID to T:active, its key's running
-- count goes up, and a rate-limited partition logs the start. Reads and
-- writes are one variadic call each for the whole batch. It returns
-- {id, message, attempt, token, ...}.
local function lease_tasks(T, msgs, now, deadline, worker, rate)
  local out = {}
  if #msgs == 0 then return out end
  local statek = T .. ':state'
  -- one string for the batch's shared deadline: a number argument would be
  -- formatted again for every task
  local dl = string.format('%d', deadline)
  local ids, keys = {}, {}
  for i, m in ipairs(msgs) do ids[i], keys[i] = msg_head(m) end
  local raws = redis.call('HMGET', statek, unpack(ids))
  local states, bodies, leases, starts = {}, {}, {}, {}
  for i, m in ipairs(msgs) do
    local id, key = ids[i], keys[i]
    local r = record_decode(raws[i])
    r[1], r[2], r[3], r[4], r[7], r[9], r[10] = 'active', r[2] + 1, r[3] + 1, worker, now, 0, key
    states[#states + 1] = id
    states[#states + 1] = cmsgpack.pack(r)
    bodies[#bodies + 1] = id
    bodies[#bodies + 1] = m
    leases[#leases + 1] = dl
    leases[#leases + 1] = id
    if rate > 0 then
      starts[#starts + 1] = now
      starts[#starts + 1] = id .. ':' .. r[3]
    end
    if key ~= '' then redis.call('HINCRBY', T .. ':keyactive', key, 1) end
    out[#out + 1] = id
    out[#out + 1] = m
    out[#out + 1] = r[2]
    out[#out + 1] = r[3]
  end
  redis.call('HSET', statek, unpack(states))
  redis.call('HSET', T .. ':msg', unpack(bodies))
  redis.call('ZADD', T .. ':active', unpack(leases))
  if rate > 0 then redis.call('ZADD', T .. ':ratelog', unpack(starts)) end
  return out
end

-- dequeue_reply parks the messages over their key's limit, leases the
-- rest and returns pop's and claim's reply: {status, aux, now, id,
-- message, attempt, token, ...}, status 0, or 4 when every message was
-- parked (look again at once).
local function dequeue_reply(T, msgs, lim, now, lease, worker, aux)
  local keep, parked = park_over_limit(T, msgs, lim.keyconc)
  local status = 0
  if #keep == 0 and parked > 0 then status = 4 end
  local out = {status, aux, now}
  for _, v in ipairs(lease_tasks(T, keep, now, now + lease, worker, lim.rate)) do
    out[#out + 1] = v
  end
  return out
end
