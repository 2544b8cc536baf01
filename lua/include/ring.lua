--@include codes
--@include msg_head
--@include sharded
-- The ring of fair queues. A task with a concurrency key does not wait in
-- its partition's pending list: it is placed in the list of its turn
-- (include/fair.lua), or waits in a list of its key, whose keys take their
-- turns from the ring, so a key with a long backlog delays the others by
-- one turn, not by its backlog. Per partition T:
--
--   T:fr  list    the ring: the keys whose tasks may start, in turn order.
--                 The head's turn is now. The member "" stands for the
--                 partition's pending list, the tasks with no key.
--   T:ft  string  "<credit> <key>": what is left of the head key's turn;
--                 absent, or naming another key: a whole turn.
--   T:fk  hash    key -> "first last state" for each key with a list: its
--                 tasks wait in the shards T:fq:<key>:<first..last>, as a
--                 sharded list does; state is r (in the ring), m (behind
--                 its placed tasks: its marker brings it in), b (at its
--                 KeyConcurrency), p (paused) or w (waiting for its KeyRate).
--   T:fz  zset    key -> the tasks in its list, for each key with one (a
--                 key with placed tasks only: see include/fair.lua).
--   T:fl  zset    the same keys, all scored 0: in the order of their names,
--                 for readers that page through every key's tasks.
--   T:fn  string  the tasks waiting in every key's shards and turns.
--   T:fw  hash    key -> its weight, for keys an operator weighted; a
--                 turn takes up to weight tasks. Others weigh 1.
--   T:fp  set     the keys an operator paused, with tasks or not.
--   T:fd  zset    key -> when its KeyRate lets it start one more (state w).
--   T:fs  string  present while "" is in the ring.
--   T:fh  string  the tasks held: waiting in the shards of keys out of the
--                 ring (states b, p, w), which QueueInfo counts as Waiting,
--                 not Pending.
--
-- A key with no task waiting leaves every structure but T:fw and T:fp,
-- which hold what an operator set. Every step costs the same whatever a
-- key's backlog and however many keys there are: a key is reached by its
-- turn, and one that may not start (paused, at its limits) leaves the ring
-- at its turn and comes back when that changes, so no turn walks it again.

-- fair_route is defined in include/fair.lua, which routes tasks to turns
-- or keys' lists; the ring's take routes the keyed tasks an older
-- producer left in the pending list with it.
local fair_route

-- fair_get returns the first and last shard and the state of key, or nil
-- when key has no task waiting.
local function fair_get(T, key)
  local v = redis.call('HGET', T .. ':fk', key)
  if not v then return nil end
  local f, l, s = string.match(v, '^(-?%d+) (-?%d+) (%a)$')
  return tonumber(f), tonumber(l), s
end

local function fair_set(T, key, first, last, state)
  redis.call('HSET', T .. ':fk', key, first .. ' ' .. last .. ' ' .. state)
end

-- fair_wake wakes a worker blocked on the partition's pending list: its
-- blocking move waits on the head shard, which holds nothing when one
-- waits there, so a dummy in an empty head shard is all it takes, and a
-- head shard that holds anything needs none.
local function fair_wake(T)
  local head = T .. ':s:' .. tonumber(redis.call('GET', T .. ':first') or 0)
  if redis.call('LLEN', head) == 0 then redis.call('LPUSH', head, DUMMY) end
end

-- fair_enter puts key at the ring's tail: its turn comes after every key
-- already there.
local function fair_enter(T, key)
  if redis.call('RPUSH', T .. ':fr', key) == 1 then fair_wake(T) end
end

-- fair_back brings a key out of the ring (state b, p or w) back into it:
-- its tasks are no longer held.
local function fair_back(T, key, first, last)
  if redis.call('HEXISTS', T .. ':fa', key) == 1 then
    -- tasks of it placed in turns (include/fair.lua) are still to be
    -- reached, and its list's tasks come after them: its marker brings it
    -- into the ring
    fair_set(T, key, first, last, 'm')
  else
    fair_set(T, key, first, last, 'r')
    fair_enter(T, key)
  end
  redis.call('INCRBY', T .. ':fh', -tonumber(redis.call('ZSCORE', T .. ':fz', key) or 0))
end

-- fair_held reports whether a key in state s is out of the ring and held:
-- its tasks count as waiting, not pending.
local function fair_held(s)
  return s == 'b' or s == 'p' or s == 'w'
end

-- fair_shards_push pushes msgs into a key's shards at one end, rolling to
-- a new shard past size items, and returns the new first and last shards.
-- Read from that end, the messages come out in the order given.
local function fair_shards_push(prefix, first, last, size, msgs, left)
  if left then
    for i = #msgs, 1, -1 do
      if redis.call('LPUSH', prefix .. first, msgs[i]) > size then
        redis.call('LPOP', prefix .. first)
        first = first - 1
        redis.call('LPUSH', prefix .. first, msgs[i])
      end
    end
    return first, last
  end
  local i = 1
  while i <= #msgs do
    local room = size - redis.call('LLEN', prefix .. last)
    if room <= 0 then
      last = last + 1
      room = size
    end
    local j = math.min(#msgs, i + room - 1)
    redis.call('RPUSH', prefix .. last, unpack(msgs, i, j))
    i = j + 1
  end
  return first, last
end

-- fair_push adds msgs, all of key, at the tail of its tasks (or at their
-- head, for tasks given back), and brings key into the ring when it had
-- none waiting and is not paused.
local function fair_push(T, key, msgs, left, size)
  local first, last, state = fair_get(T, key)
  local new = first == nil
  if new then first, last = 0, 0 end
  local f, l = fair_shards_push(T .. ':fq:' .. key .. ':', first, last, size, msgs, left)
  if new then
    state = 'r'
    if redis.call('SISMEMBER', T .. ':fp', key) == 1 then state = 'p' end
    fair_set(T, key, f, l, state)
    redis.call('ZADD', T .. ':fl', 0, key)
    if state == 'r' then fair_enter(T, key) end
  elseif f ~= first or l ~= last then
    fair_set(T, key, f, l, state)
  end
  redis.call('ZINCRBY', T .. ':fz', #msgs, key)
  redis.call('INCRBY', T .. ':fn', #msgs)
  if fair_held(state) then redis.call('INCRBY', T .. ':fh', #msgs) end
end

-- fair_release is key_release's part: a key that was at its
-- KeyConcurrency has a slot again, so it takes its place in the ring.
local function fair_release(T, key)
  local first, last, state = fair_get(T, key)
  if state == 'b' then fair_back(T, key, first, last) end
end

-- fair_resume brings a paused key back: into the ring when it has tasks
-- and left the ring while paused.
local function fair_resume(T, key)
  redis.call('SREM', T .. ':fp', key)
  local first, last, state = fair_get(T, key)
  if state == 'p' then fair_back(T, key, first, last) end
end

-- fair_read returns up to count messages from the head of shards
-- first..last of prefix, without taking them, and how many it read from
-- each shard.
local function fair_read(prefix, first, last, count)
  local out, per = {}, {}
  for n = first, last do
    if #out >= count then break end
    local got = redis.call('LRANGE', prefix .. n, 0, count - #out - 1)
    per[#per + 1] = #got
    for _, v in ipairs(got) do out[#out + 1] = v end
  end
  return out, per
end

-- fair_due brings the keys whose KeyRate lets them start again back into
-- the ring, and returns the ms until the next one may (NONE: none waits).
local function fair_due(T, now)
  local due = redis.call('ZRANGE', T .. ':fd', '-inf', now, 'BYSCORE', 'LIMIT', 0, 256)
  for _, key in ipairs(due) do
    redis.call('ZREM', T .. ':fd', key)
    local first, last, state = fair_get(T, key)
    if state == 'w' then
      if redis.call('SISMEMBER', T .. ':fp', key) == 1 then
        fair_set(T, key, first, last, 'p')
      else
        fair_back(T, key, first, last)
      end
    end
  end
  local next = redis.call('ZRANGE', T .. ':fd', 0, 0, 'WITHSCORES')
  if #next == 0 then return NONE end
  return math.max(1, tonumber(next[2]) - now)
end

-- fair_plain_count returns the tasks in the partition's pending list. A
-- dummy that woke no reader (fair_wake's, or a blocked reader's helper's)
-- sits at the head: it is no task, or a turn of "" would take it alone.
local function fair_plain_count(T, size)
  local first, last = shard_bounds(T .. ':first', T .. ':last')
  local head = T .. ':s:' .. first
  local n = redis.call('LLEN', head)
  if n == 0 then
    if first == last then return 0 end
  else
    n = n - #redis.call('LPOS', head, DUMMY, 'COUNT', 0, 'MAXLEN', 16)
  end
  if last > first then
    n = n + (last - first - 1) * size + redis.call('LLEN', T .. ':s:' .. last)
  end
  return n
end

-- fair_plain puts "" in the ring when the partition's pending list holds
-- tasks and "" is not there: the tasks with no key take their turns too.
local function fair_plain(T, size)
  if redis.call('EXISTS', T .. ':fs') == 1 then return end
  if fair_plain_count(T, size) == 0 then return end
  redis.call('SET', T .. ':fs', 1)
  redis.call('RPUSH', T .. ':fr', '')
end

-- fair_take takes up to n messages, turn by turn: each key of the ring
-- in order gives up to its weight (the head what is left of its turn),
-- within its KeyConcurrency and KeyRate, then waits for its next turn at
-- the ring's tail; "" gives the tasks of the partition's pending list. A
-- key that may not start leaves the ring. The turns of one call are
-- planned first, from reads alone, over the ring's first n keys (a key
-- taking several turns when there are few), and over more of them while
-- every key read so far has left and fewer than n were taken, up to
-- FAIR_WINDOW keys; then the plan is carried out. So on a slot that
-- migrates, a key already moved away stops the script before anything was
-- taken. It returns the messages, the ms until a key waiting for its
-- KeyRate may start again (NONE: none waits), whether keys the call did
-- not reach may start now (the caller looks again at once), and how many
-- turns it gave. It gives at most max_turns turns; leased (key -> tasks)
-- holds the tasks of keys taken earlier in the same call, which their
-- KeyConcurrency counts, and gets this call's.
local FAIR_WINDOW = 1000

local function fair_take(T, n, lim, now, size, max_turns, leased)
  local ring, fk = T .. ':fr', T .. ':fk'
  local wait = NONE
  if redis.call('EXISTS', T .. ':fd') == 1 then wait = fair_due(T, now) end
  fair_plain(T, size)
  local turn = redis.call('GET', T .. ':ft')
  local turn_key, turn_left = nil, 0
  if turn then
    local k, c = string.match(turn, '^(%d+) (.*)$')
    turn_left, turn_key = tonumber(k), c
  end
  local plain_first, plain_last = shard_bounds(T .. ':first', T .. ':last')
  local ks, queue, keys = {}, {}, {}

  -- load reads the ring's next count keys: what each may give, and which
  -- may not start now. It returns false at the ring's end.
  local function load(count)
    local from = #keys
    local got = redis.call('LRANGE', ring, from, from + count - 1)
    if #got == 0 then return false end
    local recs = redis.call('HMGET', fk, unpack(got))
    local avail = redis.call('ZMSCORE', T .. ':fz', unpack(got))
    local weights = redis.call('EXISTS', T .. ':fw') == 1 and redis.call('HMGET', T .. ':fw', unpack(got)) or {}
    local stops = redis.call('EXISTS', T .. ':fp') == 1 and redis.call('SMISMEMBER', T .. ':fp', unpack(got)) or {}
    local running = lim.keyconc > 0 and redis.call('HMGET', T .. ':keyactive', unpack(got)) or {}
    for j, key in ipairs(got) do
      local i = from + j
      keys[i] = key
      local w = weights[j]
      -- every field a key may get, set here: a table sized once
      local k = {key = key, took = 0, fate = 'turn', weight = w and math.max(1, tonumber(w) or 1) or 1,
        avail = 0, room = 0, first = 0, last = 0, head = false, items = false, next = 1,
        ratebound = false, due = false}
      ks[i] = k
      if key == '' then
        k.avail = fair_plain_count(T, size)
        k.room = math.huge
      elseif not recs[j] then
        k.fate = 'gone'
      else
        local f, l = string.match(recs[j], '^(-?%d+) (-?%d+)')
        k.first, k.last = tonumber(f), tonumber(l)
        -- the head shard's name, built from the record's own digits: a
        -- number joined to a string is formatted, which costs more
        k.head = T .. ':fq:' .. key .. ':' .. f
        k.avail = tonumber(avail[j] or 0) or 0
        k.room = math.huge
        if stops[j] == 1 then k.fate = 'p' end
        if k.fate == 'turn' and lim.keyconc > 0 then
          k.room = lim.keyconc - tonumber(running[j] or 0) - (leased[key] or 0)
          if k.room <= 0 then k.fate = 'b' end
        end
        if k.fate == 'turn' and lim.keyrate > 0 then
          local log = T .. ':kr:' .. key
          redis.call('ZREMRANGEBYSCORE', log, '-inf', now - lim.per)
          local used = redis.call('ZCARD', log)
          if lim.keyrate - used < k.room then
            k.room, k.ratebound = lim.keyrate - used, true
          end
          if k.room <= 0 then
            local oldest = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
            k.fate, k.due = 'w', math.max(now + 1, (tonumber(oldest[2]) or now) + lim.per)
          end
        end
      end
      if k.fate == 'turn' and k.avail <= 0 then k.fate = 'gone' end
      if k.fate == 'turn' then queue[#queue + 1] = i end
    end
    return #got == count
  end

  -- the plan: turns in ring order, round after round, until n are taken
  local want, head, visited = n, nil, {}
  local turns, turnn, nt = {}, {}, 0 -- key index and tasks, in the order they start
  local q, more = 1, load(math.min(n, FAIR_WINDOW))
  while want > 0 and nt < max_turns do
    if q > #queue then
      -- every key read so far left the ring: read on
      if not more or #keys >= FAIR_WINDOW then break end
      more = load(math.min(math.max(want, 16), FAIR_WINDOW - #keys))
    end
    if q <= #queue then
      local i = queue[q]
      q = q + 1
      local k = ks[i]
      visited[i] = true
      local credit = k.weight
      if i == 1 and turn_key == k.key and turn_left > 0 and k.took == 0 then credit = turn_left end
      local t = math.min(credit, k.room - k.took, k.avail - k.took, want)
      k.took, want = k.took + t, want - t
      nt = nt + 1
      turns[nt], turnn[nt] = i, t
      if want == 0 and t < credit and k.avail > k.took and k.room > k.took then
        head = {i, credit - t} -- the rest of its turn comes first next time
      elseif k.avail <= k.took then
        k.fate = 'gone'
      elseif k.room <= k.took then
        if k.ratebound then
          k.fate, k.due = 'w', now + math.max(1, math.floor(lim.per / lim.keyrate))
        else
          k.fate = 'b'
        end
      else
        queue[#queue + 1] = i -- its next turn, after the others'
      end
    elseif not more then
      break
    end
  end
  -- keys past the window may start: the call ran out of window, not keys
  local unreached = want > 0 and q > #queue and more and #keys >= FAIR_WINDOW
  if #keys == 0 then return {}, wait, false, 0 end

  -- reads: every shard the plan takes from, touched in one call before
  -- any write, so a shard moved away by a slot migration fails the call
  -- here; a turn spans two shards at most while n is at most the shard
  -- size, but the bound covers any n
  local touch = {}
  for _, k in ipairs(ks) do
    if k.took > 0 and k.key ~= '' then
      touch[#touch + 1] = k.head
      for f = k.first + 1, math.min(k.last, k.first + math.ceil(k.took / size)) do touch[#touch + 1] = T .. ':fq:' .. k.key .. ':' .. f end
    elseif k.took > 0 then
      fair_read(T .. ':s:', plain_first, plain_last, k.took + 2)
    end
  end
  for j = 1, #touch, 1000 do redis.call('EXISTS', unpack(touch, j, math.min(#touch, j + 999))) end

  -- writes: take them, and put each key in its place; the counters of
  -- every key change in one call each
  local tail, taken, held, backlog, gone = {}, 0, 0, {}, {}
  for i, k in ipairs(ks) do
    local key = k.key
    if key == '' then
      if k.took > 0 then
        local items = sharded_pop(T .. ':first', T .. ':last', T .. ':s:', k.took, true)
        -- a task with a key in the pending list (enqueued by an older
        -- producer) joins its key's tasks instead
        k.items = fair_route(T, items, false, size)
        local f, l = shard_bounds(T .. ':first', T .. ':last')
        if f == l and redis.call('LLEN', T .. ':s:' .. f) == 0 then k.fate = 'gone' end
      end
      if k.fate == 'gone' then redis.call('DEL', T .. ':fs') end
    elseif k.took > 0 then
      local items, f = {}, k.first
      if k.took == 1 then
        -- one task, the common turn: LPOP without a count answers it alone
        items[1] = redis.call('LPOP', k.head) or nil
      end
      while #items < k.took do
        local got = redis.call('LPOP', f == k.first and k.head or T .. ':fq:' .. k.key .. ':' .. f, string.format('%d', k.took - #items))
        if got then
          for _, v in ipairs(got) do items[#items + 1] = v end
        end
        if #items >= k.took or f >= k.last then break end
        f = f + 1 -- that shard is empty now
      end
      k.items = items
      leased[key] = (leased[key] or 0) + #items
      taken = taken + #items
      if lim.keyrate > 0 then
        local log = T .. ':kr:' .. key
        for _, m in ipairs(items) do
          redis.call('ZADD', log, now, msg_head(m) .. ':' .. now)
        end
        redis.call('PEXPIRE', log, lim.per)
      end
      local left = k.avail - #items
      if left <= 0 then
        k.fate = 'gone'
      else
        backlog[#backlog + 1] = string.format('%d', left)
        backlog[#backlog + 1] = key
        if f < k.last and redis.call('EXISTS', T .. ':fq:' .. k.key .. ':' .. f) == 0 then f = f + 1 end
        local state = 'r'
        if k.fate == 'b' or k.fate == 'w' then
          state = k.fate
          held = held + left
        end
        if f ~= k.first or state ~= 'r' then fair_set(T, key, f, k.last, state) end
      end
    elseif k.fate == 'b' or k.fate == 'p' or k.fate == 'w' then
      fair_set(T, key, k.first, k.last, k.fate)
      held = held + k.avail
    end
    if k.fate == 'gone' and key ~= '' then
      gone[#gone + 1] = key
    elseif k.fate == 'w' then
      redis.call('ZADD', T .. ':fd', k.due, key)
      if wait == NONE or k.due - now < wait then wait = math.max(1, k.due - now) end
    end
  end
  if taken > 0 then redis.call('INCRBY', T .. ':fn', -taken) end
  if held > 0 then redis.call('INCRBY', T .. ':fh', held) end
  for j = 1, #backlog, 1000 do redis.call('ZADD', T .. ':fz', unpack(backlog, j, math.min(#backlog, j + 999))) end
  for j = 1, #gone, 1000 do
    local to = math.min(#gone, j + 999)
    redis.call('ZREM', T .. ':fz', unpack(gone, j, to))
    redis.call('ZREM', T .. ':fl', unpack(gone, j, to))
    redis.call('HDEL', fk, unpack(gone, j, to))
  end
  -- the messages in the order of the turns that took them
  local out = {}
  local no = 0
  for x = 1, nt do
    local k = ks[turns[x]]
    local items = k.items
    for _ = 1, turnn[x] do
      local m = items and items[k.next]
      if m then
        no = no + 1
        out[no] = m
      end
      k.next = k.next + 1
    end
  end
  -- the ring: the head with the rest of its turn, then the keys of the
  -- window that had no turn, then the keys past the window, then the
  -- keys that had a turn, in the order of their next ones
  local unvisited = {}
  for i, k in ipairs(ks) do
    if k.fate == 'turn' and not visited[i] then unvisited[#unvisited + 1] = k.key end
  end
  for x = q, #queue do
    local i = queue[x]
    if visited[i] and ks[i].fate == 'turn' and not (head and head[1] == i) then tail[#tail + 1] = ks[i].key end
  end
  redis.call('LTRIM', ring, #keys, -1)
  for x = #unvisited, 1, -1 do redis.call('LPUSH', ring, unvisited[x]) end
  if head then
    redis.call('LPUSH', ring, ks[head[1]].key)
    redis.call('SET', T .. ':ft', head[2] .. ' ' .. ks[head[1]].key)
  else
    redis.call('DEL', T .. ':ft')
  end
  if #tail > 0 then redis.call('RPUSH', ring, unpack(tail)) end
  return out, wait, unreached, nt
end

-- fair_forget drops key from every structure but what an operator set:
-- it has no task waiting any more.
local function fair_forget(T, key)
  redis.call('ZREM', T .. ':fz', key)
  redis.call('ZREM', T .. ':fl', key)
  redis.call('HDEL', T .. ':fk', key)
  redis.call('ZREM', T .. ':fd', key)
  redis.call('LREM', T .. ':fr', 0, key) -- an operator's purge: the ring's length
  local turn = redis.call('GET', T .. ':ft')
  if turn and string.match(turn, '^%d+ (.*)$') == key then redis.call('DEL', T .. ':ft') end
end

-- fair_purge_lists takes up to n messages from the keys' lists, the busiest
-- keys first (100 keys a call at most), and returns them: an operator
-- empties a backlog. A key it empties leaves every structure.
local function fair_purge_lists(T, n)
  local out = {}
  if n <= 0 then return out end
  for _, key in ipairs(redis.call('ZRANGE', T .. ':fz', 0, 99, 'REV')) do
    if #out >= n then break end
    local first, last, state = fair_get(T, key)
    if first then
      local prefix = T .. ':fq:' .. key .. ':'
      local items, per = fair_read(prefix, first, last, n - #out)
      for j, c in ipairs(per) do
        if c > 0 then redis.call('LTRIM', prefix .. (first + j - 1), c, -1) end
      end
      for _, m in ipairs(items) do out[#out + 1] = m end
      redis.call('INCRBY', T .. ':fn', -#items)
      if fair_held(state) then redis.call('INCRBY', T .. ':fh', -#items) end
      if tonumber(redis.call('ZINCRBY', T .. ':fz', -#items, key)) <= 0 then
        fair_forget(T, key)
      else
        local f = first
        while f < last and redis.call('EXISTS', prefix .. f) == 0 do f = f + 1 end
        if f ~= first then fair_set(T, key, f, last, state) end
      end
    end
  end
  return out
end

-- fair_count returns the tasks waiting in every key's shards, and how
-- many of them are held (their keys are out of the ring).
local function fair_count(T)
  local v = redis.call('MGET', T .. ':fn', T .. ':fh')
  return tonumber(v[1] or 0), math.max(0, tonumber(v[2] or 0))
end
