--@include time
--@include limits
--@include feed
--@include stats
-- ack_tasks finishes the tasks of partition T that succeeded, given as four
-- ARGV fields each from index from on: id, token, retention (ms, 0 = not
-- kept), unique key ("" = none). A task is finished only under the token of
-- its current lease: a stale token (the lease was lost and the task handed
-- to another worker) changes nothing. Tasks with a retention stay in the
-- done feed until it passes (or the feed's cap trims them); the others
-- leave no record. It returns one code per task: 1 acked, 0 stale token or
-- already finished. ack runs it alone; pop and claim run it first, so a
-- busy worker's acks ride in its next dequeue.
local function ack_tasks(T, now, argv, from, cap, size)
  local ids, tokens = {}, {}
  for i = from, #argv, 4 do
    ids[#ids + 1] = argv[i]
    tokens[#tokens + 1] = argv[i + 1]
  end
  local codes = {}
  if #ids == 0 then return codes end
  local statek, msgk = T .. ':state', T .. ':msg'
  local held = records_held(statek, ids, tokens)
  local done, gone, kept, keptStates, expiries = {}, {}, {}, {}, {}
  for k, r in ipairs(held) do
    codes[k] = r and 1 or 0
    if r then
      local i = from + (k - 1) * 4
      local id, retention, unique = ids[k], tonumber(argv[i + 2]), argv[i + 3]
      done[#done + 1] = id
      key_release(T, r[10], size)
      if retention > 0 then
        r[1], r[8], r[10] = 'done', now, ''
        keptStates[#keptStates + 1] = id
        keptStates[#keptStates + 1] = cmsgpack.pack(r)
        expiries[#expiries + 1] = now + retention
        expiries[#expiries + 1] = id
        kept[#kept + 1] = id
      else
        gone[#gone + 1] = id
      end
      if unique ~= '' and redis.call('GET', T .. ':unique:' .. unique) == id then
        redis.call('DEL', T .. ':unique:' .. unique)
      end
    end
  end
  if #done > 0 then
    redis.call('ZREM', T .. ':active', unpack(done))
    redis.call('HDEL', T .. ':feed:msg', unpack(done))
  end
  if #gone > 0 then
    redis.call('HDEL', msgk, unpack(gone))
    redis.call('HDEL', statek, unpack(gone))
  end
  if #kept > 0 then
    redis.call('HSET', statek, unpack(keptStates))
    redis.call('ZADD', T .. ':expire', unpack(expiries))
    local _, trimmed = feed_append(T .. ':done', T .. ':done:rank', kept, cap)
    for _, id in ipairs(trimmed) do
      redis.call('HDEL', msgk, id)
      redis.call('HDEL', statek, id)
      redis.call('ZREM', T .. ':expire', id)
    end
  end
  stats_add(T, 'done', now, #done)
  return codes
end
