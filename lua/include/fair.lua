--@include ring
-- Turns. A key whose backlog is short, in a partition with no key limits,
-- needs no list of its own: enqueue places each of its tasks straight in
-- the list of the turn it will start in, up to its weight per turn, so a
-- pop takes a run of tasks from one list, as from a plain queue, and
-- touches no key. Per partition T, beside the ring's keys (include/ring.lua):
--
--   T:fo:<r>  list  turn r: its placed tasks, in start order, and markers
--                   (MARK .. key: every placed task of key was reached).
--   T:fi  string    "cur popped pass": the turn now; how many items left
--                   its list's head; and, once that list is done, how many
--                   ring turns are left in this turn (0: the list's part).
--                   Absent while no task is placed.
--   T:fa  hash      key -> "lr fill trickle marked r:p ...", for keys with
--                   placed tasks: the last turn holding one, how many it
--                   holds, the list shard trickled tasks go to (-1: none),
--                   whether a marker waits in turn lr, and each placed
--                   task's turn and position in it.
--   T:fe  zset      key -> lr, the same keys: the turn after which their
--                   records go.
--   T:fx  hash      key -> 1: keys whose placed tasks go to their list as
--                   they are reached (paused, or limited since), so no
--                   task of a key overtakes an older one.
--
-- Turns are kept in order: every key's placed tasks fill consecutive
-- turns from the one now, so turn r+1 holds tasks only if turn r does, but
-- for the turn now. A key with more than TURNS_AHEAD turns of tasks, a
-- paused key and every key of a limited partition keep the rest in their
-- list, behind a marker in the turn of their last placed task: when it is
-- reached, the key joins the ring, whose keys take one turn each after the
-- turn's list. A key's tasks waiting are its list's (T:fz) and its placed
-- tasks whose position is past what was taken of their turn: counted
-- exactly, with no write per take.

-- turns holds the helpers below, made by the first call that needs them
-- (turns_lib): every helper defined is a closure made per script call,
-- so a call that touches no keyed task, such as a plain pop, makes none.
local turns

local function turns_lib()
  if turns then return turns end
  local TURNS_AHEAD = 16
  local MARK = '\0' -- never the first byte of a message: a msgpack array's

  -- turns_get returns the turn now, the items taken from its list, the ring
  -- turns left in it, and whether any task is placed.
  local function turns_get(T)
    local v = redis.call('GET', T .. ':fi')
    if not v then return 0, 0, 0, false end
    local c, p, s = string.match(v, '^(%d+) (%d+) (%d+)$')
    return tonumber(c), tonumber(p), tonumber(s), true
  end

  local function turns_put(T, cur, popped, pass)
    redis.call('SET', T .. ':fi', string.format('%d %d %d', cur, popped, pass))
  end

  -- turns_rec decodes a T:fa record: nil when there is none.
  local function turns_rec(v)
    if not v then return nil end
    local lr, fill, t, mk, rest = string.match(v, '^(-?%d+) (%d+) (-?%d+) (%d)(.*)$')
    local pos = {}
    for r, p in string.gmatch(rest, ' (%d+):(%d+)') do pos[#pos + 1] = {tonumber(r), tonumber(p)} end
    return {lr = tonumber(lr), fill = tonumber(fill), t = tonumber(t), mk = mk == '1', pos = pos}
  end

  -- turns_left reports whether a placed task at turn r, position p, was not
  -- taken yet.
  local function turns_left(r, p, cur, popped)
    return r > cur or (r == cur and p > popped)
  end

  -- turns_pack encodes a record, keeping the positions of tasks not taken.
  local function turns_pack(a, cur, popped)
    local parts = {string.format('%d %d %d %d', a.lr, a.fill, a.t, a.mk and 1 or 0)}
    for _, e in ipairs(a.pos) do
      if turns_left(e[1], e[2], cur, popped) then parts[#parts + 1] = string.format('%d:%d', e[1], e[2]) end
    end
    return table.concat(parts, ' ')
  end

  -- turns_waiting counts a record's placed tasks not taken yet.
  local function turns_waiting(a, cur, popped)
    local n = 0
    for _, e in ipairs(a.pos) do
      if turns_left(e[1], e[2], cur, popped) then n = n + 1 end
    end
    return n
  end

  -- turns_mark puts key's marker after its last placed task, once.
  local function turns_mark(T, key, a)
    if a.mk then return end
    redis.call('RPUSH', T .. ':fo:' .. a.lr, MARK .. key)
    a.mk = true
  end

  -- turns_drop forgets the placed tasks of keys, all reached: their records
  -- go. A key with no list leaves every structure but what an operator set;
  -- a key whose list waited behind them (state m) joins the ring, or is
  -- held when paused.
  local function turns_drop(T, ks)
    if #ks == 0 then return end
    local lists = redis.call('HMGET', T .. ':fk', unpack(ks))
    redis.call('HDEL', T .. ':fa', unpack(ks))
    redis.call('ZREM', T .. ':fe', unpack(ks))
    if redis.call('EXISTS', T .. ':fx') == 1 then redis.call('HDEL', T .. ':fx', unpack(ks)) end
    local gone = {}
    for i, key in ipairs(ks) do
      if not lists[i] then
        gone[#gone + 1] = key
      elseif string.sub(lists[i], -1) == 'm' then
        local first, last = fair_get(T, key)
        if redis.call('SISMEMBER', T .. ':fp', key) == 1 then
          fair_set(T, key, first, last, 'p')
          redis.call('INCRBY', T .. ':fh', tonumber(redis.call('ZSCORE', T .. ':fz', key) or 0))
        else
          fair_set(T, key, first, last, 'r')
          fair_enter(T, key)
        end
      end
    end
    if #gone > 0 then
      redis.call('ZREM', T .. ':fz', unpack(gone))
      redis.call('ZREM', T .. ':fl', unpack(gone))
    end
  end

  -- turns_clean forgets up to 1,000 keys whose last placed task was in a
  -- turn up to upto, all taken: a key left no record after its last task.
  -- It returns whether any such key is left.
  local function turns_clean(T, upto)
    local ks = redis.call('ZRANGE', T .. ':fe', '-inf', upto, 'BYSCORE', 'LIMIT', 0, 1000)
    turns_drop(T, ks)
    return #ks == 1000
  end

  -- turns_base returns the first turn a new task may be placed in: the turn
  -- now while its list is being taken, else the next.
  local function turns_base(cur, pass)
    if pass > 0 then return cur + 1 end
    return cur
  end

  -- turns_list_push adds msgs to the list of a key that has no list but
  -- placed tasks still to be reached: they wait behind those, so the key
  -- takes state m (or p, paused) and its marker brings it into the ring.
  local function turns_list_push(T, key, a, msgs, left, size, paused)
    local f, l = fair_shards_push(T .. ':fq:' .. key .. ':', 0, 0, size, msgs, left)
    local state = paused and 'p' or 'm'
    fair_set(T, key, f, l, state)
    redis.call('ZADD', T .. ':fz', #msgs, key) -- was the placed count: now the list's
    redis.call('ZADD', T .. ':fl', 0, key)
    redis.call('INCRBY', T .. ':fn', #msgs)
    if paused then redis.call('INCRBY', T .. ':fh', #msgs) end
    turns_mark(T, key, a)
  end

  -- turns_push adds msgs of key to its list (include/ring.lua's fair_push),
  -- minding tasks of it placed in turns: its list waits behind them.
  local function turns_push(T, key, msgs, left, size)
    if redis.call('HEXISTS', T .. ':fk', key) == 0 then
      local a = turns_rec(redis.call('HGET', T .. ':fa', key))
      if a then
        local cur, popped, pass = turns_get(T)
        if a.lr >= turns_base(cur, pass) or turns_waiting(a, cur, popped) > 0 then
          local paused = redis.call('SISMEMBER', T .. ':fp', key) == 1
          turns_list_push(T, key, a, msgs, left, size, paused)
          redis.call('HSET', T .. ':fa', key, turns_pack(a, cur, popped))
          return
        end
        turns_drop(T, {key}) -- every placed task was taken
      end
    end
    fair_push(T, key, msgs, left, size)
  end

  -- turns_call runs a variadic command over items, 1,000 at a time (a
  -- call's arguments are bounded by Lua's stack), and returns the replies
  -- joined; step 1,000 keeps field-value pairs whole.
  local function turns_call(cmd, key, items)
    local out = {}
    for j = 1, #items, 1000 do
      local r = redis.call(cmd, key, unpack(items, j, math.min(#items, j + 999)))
      if type(r) == 'table' then
        for _, v in ipairs(r) do out[#out + 1] = v end
      end
    end
    return out
  end

  -- turns_place places the tasks of the keys in order (key -> its messages
  -- in bykey) that may go straight into turns: keys with no list, not
  -- paused, not trickling, in a partition with no key limits. Each key
  -- fills the turns from its last one (the turn now for a new key), up to
  -- its weight per turn and TURNS_AHEAD turns ahead; the rest of its tasks
  -- stay in bykey for its list (turns_push), behind its marker. One push
  -- per turn for the batch, and one write per structure.
  local function turns_place(T, order, bykey)
    if redis.call('EXISTS', T .. ':limits') == 1 then
      local l = redis.call('HMGET', T .. ':limits', 'keyconc', 'keyrate')
      if (tonumber(l[1]) or 0) > 0 or (tonumber(l[2]) or 0) > 0 then return end
    end
    local cur, popped, pass, live = turns_get(T)
    local base = turns_base(cur, pass)
    local fk, fa = T .. ':fk', T .. ':fa'
    local lists = turns_call('HMGET', fk, order)
    local recs = turns_call('HMGET', fa, order)
    local paused = redis.call('EXISTS', T .. ':fp') == 1 and turns_call('SMISMEMBER', T .. ':fp', order) or {}
    local held = redis.call('EXISTS', T .. ':fx') == 1 and turns_call('HMGET', T .. ':fx', order) or {}
    local weights = redis.call('EXISTS', T .. ':fw') == 1 and turns_call('HMGET', T .. ':fw', order) or {}
    local turns, torder, placed = {}, {}, {}
    local function slot(r, m)
      local list = turns[r]
      if not list then
        list = {}
        turns[r] = list
        torder[#torder + 1] = r
      end
      list[#list + 1] = m
      return #list
    end
    local total = 0
    for j, key in ipairs(order) do
      if not lists[j] and paused[j] ~= 1 and not held[j] then
        local w = weights[j] and math.max(1, tonumber(weights[j]) or 1) or 1
        local a = turns_rec(recs[j]) or {lr = 0, fill = 0, t = -1, mk = false, pos = {}}
        if a.lr < base or not recs[j] then a.lr, a.fill = base - 1, w end
        local msgs, i = bykey[key], 1
        while i <= #msgs do
          local r = a.fill < w and a.lr or a.lr + 1
          if r >= base + TURNS_AHEAD then break end
          if r ~= a.lr then a.lr, a.fill = r, 0 end
          a.fill = a.fill + 1
          a.pos[#a.pos + 1] = {r, slot(r, msgs[i]), true}
          i = i + 1
        end
        if i > 1 then
          a.mk = false -- a marker of an earlier placement is stale now
          total = total + i - 1
          local rest = {}
          for x = i, #msgs do rest[#rest + 1] = msgs[x] end
          bykey[key] = rest
          placed[#placed + 1] = {key, a, #rest}
          if #rest > 0 then
            slot(a.lr, MARK .. key)
            a.mk = true
          end
        end
      end
    end
    if #torder == 0 then return end
    if not live then
      cur, popped, pass = 0, 0, 0
      turns_put(T, 0, 0, 0)
    end
    local was = redis.call('EXISTS', T .. ':fo:' .. cur, T .. ':fo:' .. (cur + 1))
    local offset = {}
    for _, r in ipairs(torder) do
      local list, len = turns[r], 0
      for j = 1, #list, 1000 do len = redis.call('RPUSH', T .. ':fo:' .. r, unpack(list, j, math.min(#list, j + 999))) end
      offset[r] = len - #list + (r == cur and popped or 0)
    end
    local arec, ends, counts, names = {}, {}, {}, {}
    for _, p in ipairs(placed) do
      local key, a, rest = p[1], p[2], p[3]
      for _, e in ipairs(a.pos) do
        if e[3] then e[2], e[3] = offset[e[1]] + e[2], nil end
      end
      arec[#arec + 1], arec[#arec + 2] = key, turns_pack(a, cur, popped)
      ends[#ends + 1], ends[#ends + 2] = a.lr, key
      names[#names + 1], names[#names + 2] = 0, key
      if rest == 0 then
        -- a key with no list: T:fz holds its placed count, for the order of Keys
        counts[#counts + 1], counts[#counts + 2] = turns_waiting(a, cur, popped), key
      end
    end
    turns_call('HSET', fa, arec)
    turns_call('ZADD', T .. ':fe', ends)
    turns_call('ZADD', T .. ':fl', names)
    turns_call('ZADD', T .. ':fz', counts)
    redis.call('INCRBY', T .. ':fn', total)
    if was == 0 then fair_wake(T) end
  end

  -- turns_reached: key's marker was reached in turn cur, so was every task
  -- of it placed in turns, unless it was placed again since (a later turn
  -- holds its marker, if it has one).
  local function turns_reached(T, key, cur)
    local a = turns_rec(redis.call('HGET', T .. ':fa', key))
    if a and a.lr > cur then return end
    turns_drop(T, {key})
  end

  -- turns_trickle moves m, a placed task of key reached while key may not
  -- start it (paused, or limited), to key's list: after the tasks trickled
  -- before it, before the tasks the list had, so a key's tasks start in
  -- order. The key's list waits until its marker.
  local function turns_trickle(T, key, m, cur, popped)
    local a = turns_rec(redis.call('HGET', T .. ':fa', key)) or {lr = cur, fill = 1, t = -1, mk = false, pos = {}}
    local first, last, state = fair_get(T, key)
    local t = a.t
    if not first then
      -- a new list: later tasks of the key go to shard 1, after this one
      state = redis.call('SISMEMBER', T .. ':fp', key) == 1 and 'p' or 'm'
      t, first, last = 0, 0, 1
      fair_set(T, key, first, last, state)
      redis.call('ZADD', T .. ':fz', 0, key) -- the list's count from now on
    elseif t < first then
      t, first = first - 1, first - 1
      fair_set(T, key, first, last, state)
    end
    redis.call('RPUSH', T .. ':fq:' .. key .. ':' .. t, m)
    redis.call('ZINCRBY', T .. ':fz', 1, key)
    if fair_held(state) then redis.call('INCRBY', T .. ':fh', 1) end
    a.t = t
    turns_mark(T, key, a)
    redis.call('HSET', T .. ':fa', key, turns_pack(a, cur, popped))
    redis.call('ZADD', T .. ':fe', a.lr, key)
    redis.call('HSET', T .. ':fx', key, 1)
  end

  -- turns_pause: a paused key's placed tasks go to its list as they are
  -- reached, and a list waiting for its marker is held.
  local function turns_pause(T, key)
    local a = turns_rec(redis.call('HGET', T .. ':fa', key))
    if not a then return end
    local cur, popped, pass = turns_get(T)
    if a.lr < turns_base(cur, pass) and turns_waiting(a, cur, popped) == 0 then
      turns_drop(T, {key})
      return
    end
    turns_mark(T, key, a)
    redis.call('HSET', T .. ':fa', key, turns_pack(a, cur, popped))
    redis.call('HSET', T .. ':fx', key, 1)
    local first, last, state = fair_get(T, key)
    if state == 'm' then
      fair_set(T, key, first, last, 'p')
      redis.call('INCRBY', T .. ':fh', tonumber(redis.call('ZSCORE', T .. ':fz', key) or 0))
    end
  end

  -- turns_resume: a resumed key with no list starts its placed tasks as
  -- they are reached again (one with a list waits for its marker: see
  -- include/ring.lua's fair_back).
  local function turns_resume(T, key)
    if redis.call('HEXISTS', T .. ':fk', key) == 0 then redis.call('HDEL', T .. ':fx', key) end
  end

  -- fair_pop takes up to n messages, turn by turn: each turn gives the
  -- tasks placed in it, then one turn to each key of the ring
  -- (include/ring.lua's fair_take); with nothing placed, the ring alone. A
  -- placed task of a key in T:fx, and every placed task under a key limit,
  -- goes to its key's list instead (turns_trickle); a marker brings its key
  -- into the ring. It returns the messages, the ms until a key waiting for
  -- its KeyRate may start again (NONE: none waits), and whether keys the
  -- call did not reach may start now.
  local function fair_pop(T, n, lim, now, size)
    local cur, popped, pass, live = turns_get(T)
    if not live then
      local out, wait, unreached = fair_take(T, n, lim, now, size, math.huge, {})
      return out, wait, unreached
    end
    -- on a slot that migrates, a structure moved away fails the call here,
    -- before any write
    redis.call('EXISTS', T .. ':fa', T .. ':fe', T .. ':fx', T .. ':fk', T .. ':fz', T .. ':fl',
      T .. ':fr', T .. ':fn', T .. ':fh', T .. ':fp', T .. ':fo:' .. cur, T .. ':fo:' .. (cur + 1))
    local trickle_all = lim.keyconc > 0 or lim.keyrate > 0
    local fx = not trickle_all and redis.call('EXISTS', T .. ':fx') == 1
    local out, wait, unreached, taken, leased = {}, NONE, false, 0, {}
    local function ring(want, turns)
      local msgs, due, unr, nt = fair_take(T, want, lim, now, size, turns, leased)
      for _, m in ipairs(msgs) do out[#out + 1] = m end
      if due ~= NONE and (wait == NONE or due < wait) then wait = due end
      unreached = unreached or unr
      return #msgs, nt
    end
    local rounds = 0
    while n - #out > 0 do
      rounds = rounds + 1
      if rounds > 64 then
        -- bounded work per call: the caller looks again at once
        unreached = true
        break
      end
      local want = n - #out
      local done = false -- the turn is over: its list and its ring turns
      if pass == 0 then
        -- a window of the turn's list: markers and tasks that go to their
        -- lists do not count against n, so while tasks may go to their
        -- lists it reads past them; else markers are few, and a read of
        -- want items, the next round of this loop reading on
        local list = T .. ':fo:' .. cur
        local window = (trickle_all or fx) and math.max(want, 128) or want
        local got = redis.call('LRANGE', list, 0, window - 1)
        local keyof, hold = {}, {}
        if (trickle_all or fx) and #got > 0 then
          local ks = {}
          for i, v in ipairs(got) do
            if string.byte(v, 1) ~= 0 then
              local _, key = msg_head(v)
              keyof[i] = key
              ks[#ks + 1] = key
            end
          end
          if fx and #ks > 0 then
            for j, h in ipairs(turns_call('HMGET', T .. ':fx', ks)) do
              if h then hold[ks[j]] = true end
            end
          end
        end
        -- what this call takes: up to want tasks that start
        local used, starts = 0, 0
        for i, v in ipairs(got) do
          if starts >= want then break end
          used = i
          if string.byte(v, 1) ~= 0 and not (keyof[i] and (trickle_all or hold[keyof[i]])) then starts = starts + 1 end
        end
        -- the shards trickles go to, touched before the first write too
        local tk, seen = {}, {}
        for i = 1, used do
          local key = keyof[i]
          if key and (trickle_all or hold[key]) and not seen[key] then
            seen[key] = true
            tk[#tk + 1] = key
          end
        end
        if #tk > 0 then
          local ls, as, touch = turns_call('HMGET', T .. ':fk', tk), turns_call('HMGET', T .. ':fa', tk), {}
          for j, key in ipairs(tk) do
            local first = ls[j] and tonumber(string.match(ls[j], '^(-?%d+)'))
            local a = turns_rec(as[j])
            local t = 0
            if first then t = (a and a.t >= first) and a.t or first - 1 end
            touch[#touch + 1] = T .. ':fq:' .. key .. ':' .. t
          end
          for j = 1, #touch, 1000 do redis.call('EXISTS', unpack(touch, j, math.min(#touch, j + 999))) end
        end
        if used > 0 then redis.call('LTRIM', list, used, -1) end
        popped = popped + used
        for i = 1, used do
          local v = got[i]
          if string.byte(v, 1) == 0 then
            turns_reached(T, string.sub(v, 2), cur)
          elseif keyof[i] and (trickle_all or hold[keyof[i]]) then
            turns_trickle(T, keyof[i], v, cur, popped)
          else
            out[#out + 1] = v
            taken = taken + 1
          end
        end
        if used == #got and #got < window then
          -- the ring's keys take their turns now, "" among them when the
          -- pending list has tasks
          fair_plain(T, size)
          pass = redis.call('LLEN', T .. ':fr')
          if pass == 0 then done = true end
        end
      end
      if pass > 0 and n - #out > 0 then
        local w = n - #out
        local got, nt = ring(w, pass)
        pass = pass - nt
        if got < w or pass <= 0 then done = true end
      end
      if done then
        pass = 0
        if redis.call('EXISTS', T .. ':fo:' .. (cur + 1)) == 1 then
          turns_clean(T, cur)
          cur, popped = cur + 1, 0
        elseif redis.call('EXISTS', T .. ':fo:' .. cur) == 0 then
          -- nothing placed waits: the ring alone, as before any was
          if not turns_clean(T, cur) and redis.call('EXISTS', T .. ':fe') == 0 then
            redis.call('DEL', T .. ':fi')
            live = false
          end
          if n - #out > 0 then ring(n - #out, math.huge) end
          break
        end
      end
    end
    if taken > 0 then redis.call('INCRBY', T .. ':fn', -taken) end
    if live then turns_put(T, cur, popped, pass) end
    return out, wait, unreached
  end

  -- fair_purge takes up to n messages for an operator emptying a backlog:
  -- the placed tasks first, turn by turn, then the keys' lists, the
  -- busiest keys first (include/ring.lua's fair_purge_lists).
  local function fair_purge(T, n)
    local out = {}
    local cur, popped, pass, live = turns_get(T)
    if live then
      local gone = 0
      for _ = 1, 64 do
        local want = n - #out
        if want <= 0 then break end
        local list = T .. ':fo:' .. cur
        local got = redis.call('LRANGE', list, 0, want - 1)
        if #got > 0 then redis.call('LTRIM', list, #got, -1) end
        popped = popped + #got
        for _, v in ipairs(got) do
          if string.byte(v, 1) == 0 then
            turns_reached(T, string.sub(v, 2), cur)
          else
            out[#out + 1] = v
            gone = gone + 1
          end
        end
        if #got < want then
          pass = 0
          if redis.call('EXISTS', T .. ':fo:' .. (cur + 1)) == 1 then
            turns_clean(T, cur)
            cur, popped = cur + 1, 0
          else
            if not turns_clean(T, cur) and redis.call('EXISTS', T .. ':fe') == 0 then
              redis.call('DEL', T .. ':fi')
              live = false
            end
            break
          end
        end
      end
      if gone > 0 then redis.call('INCRBY', T .. ':fn', -gone) end
      if live then turns_put(T, cur, popped, pass) end
    end
    for _, m in ipairs(fair_purge_lists(T, n - #out)) do out[#out + 1] = m end
    return out
  end

  turns = {get = turns_get, rec = turns_rec, waiting = turns_waiting, push = turns_push,
    place = turns_place, pause = turns_pause, resume = turns_resume, pop = fair_pop,
    purge = fair_purge}
  return turns
end

-- fair_route sends the messages with a concurrency key to their keys'
-- tasks, in order per key: into turns where they may go (turns_place), the
-- rest to their keys' lists, at the tail (at the head, for tasks given
-- back: left). It returns the others, in order, for the partition's
-- pending list.
function fair_route(T, msgs, left, size)
  local plain, bykey, order = {}, {}, {}
  for _, m in ipairs(msgs) do
    local _, key = msg_head(m)
    if key == '' then
      plain[#plain + 1] = m
    else
      local l = bykey[key]
      if not l then
        l = {}
        bykey[key] = l
        order[#order + 1] = key
      end
      l[#l + 1] = m
    end
  end
  if #order == 0 then return plain end
  local t = turns_lib()
  if not left then t.place(T, order, bykey) end
  for _, key in ipairs(order) do
    if #bykey[key] > 0 then t.push(T, key, bykey[key], left, size) end
  end
  return plain
end
