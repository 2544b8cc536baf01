--@include msgid
--@include record
-- Per-key rate limits (keyrate in T:limits, per the limits' per): no
-- window of length per holds more than keyrate starts of tasks with the
-- same concurrency key. Each key's starts are logged in T:kr:<key> (a zset
-- that expires with its window). A task over its key's rate is parked in
-- T:scheduled, due when its key may start one more: the forwarder brings
-- it back to pending on time, and holding no worker slot meanwhile, it
-- cannot keep other keys' tasks from running. A key's parked tasks wait in
-- line, T:krq:<key> (id -> due), per/keyrate apart, so a busy key's
-- backlog comes back at its rate, not all at once. A task that comes back
-- and still finds no room (an earlier start ran late) keeps its place: it
-- is due again as soon as the oldest start leaves the window.

-- keyrate_park keeps the messages whose key is under its rate, logging
-- their starts, and parks the others. It returns the kept messages and
-- how many it parked.
local function keyrate_park(T, msgs, keyrate, per, now)
  if keyrate <= 0 then return msgs, 0 end
  local keep, used, parked = {}, {}, 0
  local gap = math.max(1, math.floor(per / keyrate))
  for _, m in ipairs(msgs) do
    local id, key = msg_head(m)
    if key == '' then
      keep[#keep + 1] = m
    else
      local log, line = T .. ':kr:' .. key, T .. ':krq:' .. key
      local n = used[key]
      if n == nil then
        redis.call('ZREMRANGEBYSCORE', log, '-inf', now - per)
        n = redis.call('ZCARD', log)
      end
      if n < keyrate then
        redis.call('ZADD', log, now, id .. ':' .. now)
        redis.call('PEXPIRE', log, per)
        redis.call('ZREM', line, id)
        used[key] = n + 1
        keep[#keep + 1] = m
      else
        used[key] = n
        local oldest = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
        local due = math.max(now + 1, (tonumber(oldest[2]) or now) + per)
        if not redis.call('ZSCORE', line, id) then
          -- a newcomer goes to the end of the line
          local last = redis.call('ZRANGE', line, -1, -1, 'WITHSCORES')
          if #last > 0 then due = math.max(due, tonumber(last[2]) + gap) end
        end
        redis.call('ZADD', line, due, id)
        local ends = redis.call('ZRANGE', line, -1, -1, 'WITHSCORES')
        redis.call('PEXPIRE', line, tonumber(ends[2]) - now + per)
        local r, had = record_get(T .. ':state', id)
        if had then
          r[1], r[9] = 'scheduled', due
          record_put(T .. ':state', id, r)
        else
          redis.call('HSET', T .. ':state', id, record_new('scheduled', due))
        end
        redis.call('HSET', T .. ':msg', id, m)
        redis.call('ZADD', T .. ':scheduled', due, id)
        parked = parked + 1
      end
    end
  end
  return keep, parked
end
