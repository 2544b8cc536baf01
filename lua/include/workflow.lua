--@include closed
--@include record
--@include pending
-- Workflows. A workflow wid keeps everything in one hash W = H:w:<wid>:
-- its state and counters (state, n, edges, open: nodes waiting or
-- enqueued, bad: nodes dead or failed, cnt_<state>: nodes per state; why,
-- and the node and task ID that died of it, why_node and why_id, or
-- "cancelled"; created, finished, ret; dr, "<shard size> <feed cap>",
-- when its nodes are released straight into their queues), and
-- per node name x: m:x {task ID, queue, type, partition} (cmsgpack); s:x its state,
-- followed while it waits by its parents' effects, "<state> <unfinished>
-- <fail> <skip>"; c:x its children {{name, edge}, ...} (cmsgpack); e:x
-- its delivery until it is released; r:x its result; x:x its error. A
-- node's state: w waiting for parents, p enqueued (pending, running or
-- retrying), s succeeded, d dead, f failed (a parent did not succeed,
-- over a fail edge), k skipped (over a skip edge), x cancelled. An edge
-- says what a parent that did not succeed (d, f, k or x) means to its
-- child: 'f' fail, 'r' run anyway, 'k' skip. A child's counters change
-- only when a parent's state changes, so an outcome costs O(its node's
-- children), never a walk of the graph. A node leaves w, f and k only to
-- be enqueued, and never comes back, so only those states keep counters.
--
-- A released node's task goes one of two ways. On one Redis server (dr
-- set), the script that releases it pushes it into its queue partition,
-- in the same script as its new state: a node is enqueued exactly once
-- because that script runs once. On Redis Cluster, the partition is in
-- another slot, so the node goes into the home's outbox, and a delivery
-- with an ID claim enqueues it (include/flowhome.lua). A partition that
-- closed since the workflow was recorded (its queue was narrowed) takes
-- the outbox's way too: the delivery routes it again.
--
-- The helpers are made on first use (wf_lib): every definition is a
-- closure made at each script call, and acks.lua, which every pop
-- includes, needs them only for an ack of a workflow node.

local WF -- the helpers, once made

local function wf_lib()
  if WF then return WF end
  local OPEN = {w = true, p = true}
  local BAD = {d = true, f = true}
  local WAITS = {w = true, f = true, k = true}

  -- effect is what parent state ps means to a child over edge e:
  -- 'u' unfinished, 'f' fail, 'k' skip, '' satisfied.
  local function effect(ps, e)
    if ps == 'w' or ps == 'p' then return 'u' end
    if ps == 's' or e == 'r' then return '' end
    return e
  end

  -- count adds d to the counter of effect ef of node entry n.
  local function count(n, ef, d)
    if ef == 'u' then n[2] = n[2] + d elseif ef == 'f' then n[3] = n[3] + d elseif ef == 'k' then n[4] = n[4] + d end
  end

  -- A run is one script's work on workflow W at time now: the nodes it
  -- read ({state, unfinished, fail, skip}, and c: their children once
  -- read), the ones it changed, and what it enqueues or puts into the
  -- outbox, all written once by flush.
  local function start(H, W, now)
    return {H = H, W = W, now = now, nodes = {}, dirty = {}, order = {}, work = {}, open = 0, bad = 0,
      counts = {}, out = {}, outmsg = {}, gone = {}, released = {}, push = {}, pushed = {}}
  end

  -- parse reads a node's stored state.
  local function parse(v)
    local st, u, f, k = string.match(v, '^(%a) (%d+) (%d+) (%d+)$')
    if st then return {st, tonumber(u), tonumber(f), tonumber(k)} end
    return {v, 0, 0, 0}
  end

  -- load reads the states of the nodes xs that run r has not read, and
  -- with children their children lists, 500 nodes a call: a call per node
  -- would cost a fan-out of thousands a call per child.
  local function load(r, xs, children)
    local want, seen = {}, {}
    for _, x in ipairs(xs) do
      if r.nodes[x] == nil and not seen[x] then
        seen[x] = true
        want[#want + 1] = x
      end
    end
    for i = 1, #want, 500 do
      local fields = {}
      local last = math.min(i + 499, #want)
      for j = i, last do
        fields[#fields + 1] = 's:' .. want[j]
        if children then fields[#fields + 1] = 'c:' .. want[j] end
      end
      local v = redis.call('HMGET', r.W, unpack(fields))
      local step = children and 2 or 1
      for j = i, last do
        local k = step * (j - i) + 1
        local n = v[k] and parse(v[k]) or false
        if n and children then n.c = v[k + 1] or false end
        r.nodes[want[j]] = n
      end
    end
  end

  -- node returns node x's entry, or nil when W has no such node. With
  -- children, a first read takes its children list in the same call, for
  -- a node about to change state (set reads it then).
  local function node(r, x, children)
    if r.nodes[x] == nil then load(r, {x}, children) end
    return r.nodes[x] or nil
  end

  local function dirty(r, x)
    if not r.dirty[x] then
      r.dirty[x] = true
      r.order[#r.order + 1] = x
    end
  end

  -- set moves node x (entry n) to state new: the workflow's counters,
  -- and its waiting children's, which are queued for evaluation.
  local function set(r, x, n, new)
    local st = n[1]
    n[1] = new
    dirty(r, x)
    r.open = r.open + (OPEN[new] and 1 or 0) - (OPEN[st] and 1 or 0)
    r.bad = r.bad + (BAD[new] and 1 or 0) - (BAD[st] and 1 or 0)
    r.counts[st] = (r.counts[st] or 0) - 1
    r.counts[new] = (r.counts[new] or 0) + 1
    -- from waiting to enqueued, or back, means the same to every child
    if OPEN[st] and OPEN[new] then return end
    local cs = n.c
    if cs == nil then cs = redis.call('HGET', r.W, 'c:' .. x) end
    if not cs then return end
    local chs, changed = cmsgpack.unpack(cs), {}
    for _, ch in ipairs(chs) do
      if effect(st, ch[2]) ~= effect(new, ch[2]) then changed[#changed + 1] = ch[1] end
    end
    load(r, changed)
    for _, ch in ipairs(chs) do
      local a, b = effect(st, ch[2]), effect(new, ch[2])
      if a ~= b then
        local c = node(r, ch[1])
        if c and WAITS[c[1]] then
          count(c, a, -1)
          count(c, b, 1)
          dirty(r, ch[1])
          r.work[#r.work + 1] = ch[1]
        end
      end
    end
  end

  -- settings reads, once a run, whether the workflow was cancelled and
  -- how its nodes are released (dr).
  local function settings(r)
    if r.cancelled ~= nil then return end
    local f = redis.call('HMGET', r.W, 'state', 'dr')
    r.cancelled = f[1] == 'cancelled'
    if f[2] and f[2] ~= '' then
      local size, cap = string.match(f[2], '^(%d+) (%d+)$')
      r.size, r.cap = tonumber(size), tonumber(cap)
      r.prefix = string.match(r.H, '^{(.*):flows:%d+}$')
    end
  end

  -- outbox puts task id, of delivery e, into the home's outbox, visible
  -- at ats, for the caller or a sweeper to deliver.
  local function outbox(r, id, e, ats)
    r.out[#r.out + 1], r.out[#r.out + 2] = ats, id
    r.outmsg[#r.outmsg + 1], r.outmsg[#r.outmsg + 2] = id, e
    r.released[#r.released + 1] = id
  end

  -- release sends released node x, whose task is id (nil: read from its
  -- delivery) and delivery e: into its partition's push (flush writes
  -- it), or into the outbox, visible at ats.
  local function release(r, x, id, e, ats)
    if r.size then
      -- {queue, partition, partitions, id, message, at, in, unique, unique ttl}
      local ok, d = pcall(cmsgpack.unpack, e)
      if ok and type(d) == 'table' and type(d[5]) == 'string' then
        local T = '{' .. r.prefix .. ':' .. d[1] .. ':' .. string.format('%d', d[2]) .. '}'
        local g = r.push[T]
        if not g then
          g = {T = T, ids = {}, msgs = {}, es = {}, due = {}}
          r.push[T] = g
          r.pushed[#r.pushed + 1] = g
        end
        local due = 0
        if d[6] > 0 then due = d[6] elseif d[7] > 0 then due = r.now + d[7] end
        local k = #g.ids + 1
        g.ids[k], g.msgs[k], g.es[k], g.due[k] = d[4], d[5], e, due
        return
      end
      -- a delivery this script cannot read (an older producer wrote its
      -- message as binary, which cmsgpack lacks) goes the outbox's way:
      -- Go reads both
      if not id then id = cmsgpack.unpack(redis.call('HGET', r.W, 'm:' .. x))[1] end
    end
    outbox(r, id, e, ats)
  end

  -- run evaluates the queued nodes, and those their changes queue: a
  -- node waiting, failed or skipped takes the state its counters give;
  -- one whose parents all allow it is released (release), visible in
  -- the outbox at at. The nodes of a round of work are read together
  -- (load), and so are the released nodes' tasks, at the end.
  local function run(r, at)
    -- formatted once: a number argument is formatted at every use
    local ats = string.format('%d', at)
    r.ats = ats
    local i, work, rel = 1, r.work, {}
    while work[i] ~= nil do
      local last, round = #work, {}
      for j = i, last do round[#round + 1] = work[j] end
      load(r, round)
      for j = i, last do
        local x = work[j]
        local n = node(r, x)
        if n and WAITS[n[1]] then
          local new = 'p'
          if n[3] > 0 then new = 'f' elseif n[2] > 0 then new = 'w' elseif n[4] > 0 then new = 'k' end
          if new == 'p' then
            -- a cancelled workflow releases nothing: a node it frees is cancelled
            settings(r)
            if r.cancelled then new = 'x' end
          end
          if new ~= n[1] then
            if new == 'p' then rel[#rel + 1] = x end
            set(r, x, n, new)
          end
        end
      end
      i = last + 1
    end
    -- a release straight into a queue finds the task's ID in its delivery
    local meta = r.size == nil
    for k = 1, #rel, 500 do
      local fields, last = {}, math.min(k + 499, #rel)
      for j = k, last do
        if meta then fields[#fields + 1] = 'm:' .. rel[j] end
        fields[#fields + 1] = 'e:' .. rel[j]
      end
      local v = redis.call('HMGET', r.W, unpack(fields))
      for j = k, last do
        if meta then
          local m = 2 * (j - k) + 1
          release(r, rel[j], cmsgpack.unpack(v[m])[1], v[m + 1], ats)
        else
          release(r, rel[j], nil, v[j - k + 1], ats)
        end
        r.gone[#r.gone + 1] = 'e:' .. rel[j]
      end
    end
  end

  -- chunks calls cmd on key with args, at most step of them per call.
  local function chunks(cmd, key, args, step)
    for i = 1, #args, step do
      redis.call(cmd, key, unpack(args, i, math.min(i + step - 1, #args)))
    end
  end

  -- push enqueues the released tasks of one partition (g), as enqueue.lua
  -- does: pending now, or scheduled when the node has a delay. A closed
  -- partition takes none: they go into the outbox.
  local function push(r, g)
    local T = g.T
    if rank_closed(redis.call('GET', T .. ':feed:rank')) then
      for k, id in ipairs(g.ids) do outbox(r, id, g.es[k], r.ats) end
      return
    end
    local keyed, plain, at, members, copies = {}, {}, {}, {}, {}
    for k, id in ipairs(g.ids) do
      local msg, due = g.msgs[k], g.due[k]
      members[k] = id
      if due > r.now then
        redis.call('ZADD', T .. ':scheduled', due, id)
        redis.call('HSET', T .. ':msg', id, msg)
        redis.call('HSET', T .. ':state', id, record_new('scheduled', due))
        copies[#copies + 1], copies[#copies + 2] = id, msg
      elseif msg_keyed(msg) then
        keyed[#keyed + 1] = msg
        copies[#copies + 1], copies[#copies + 2] = id, msg
      else
        plain[#plain + 1], at[#at + 1] = msg, k
      end
    end
    pending_store(T, r.size, r.cap, keyed, plain, at, members, copies)
  end

  -- flush writes what run r changed.
  local function flush(r)
    local kv = {}
    for _, x in ipairs(r.order) do
      local n = r.nodes[x]
      kv[#kv + 1] = 's:' .. x
      kv[#kv + 1] = WAITS[n[1]] and string.format('%s %d %d %d', n[1], n[2], n[3], n[4]) or n[1]
    end
    chunks('HSET', r.W, kv, 1000)
    if r.open ~= 0 then redis.call('HINCRBY', r.W, 'open', r.open) end
    if r.bad ~= 0 then redis.call('HINCRBY', r.W, 'bad', r.bad) end
    for st, d in pairs(r.counts) do
      if d ~= 0 then redis.call('HINCRBY', r.W, 'cnt_' .. st, d) end
    end
    chunks('HDEL', r.W, r.gone, 1000)
    for _, g in ipairs(r.pushed) do push(r, g) end
    chunks('ZADD', r.H .. ':out', r.out, 1000)
    chunks('HSET', r.H .. ':outmsg', r.outmsg, 1000)
    r.order, r.dirty, r.gone, r.out, r.outmsg, r.open, r.bad, r.counts = {}, {}, {}, {}, {}, 0, 0, {}
    r.push, r.pushed = {}, {}
  end

  -- check finishes the workflow when no node is open (its state: failed
  -- when a node is dead or failed, else succeeded, unless cancelled), and
  -- sets its retention; a finished one a retried node opened again runs
  -- again.
  local function check(W, now)
    local f = redis.call('HMGET', W, 'state', 'open', 'bad', 'finished', 'ret')
    if tonumber(f[2]) > 0 then
      if f[4] ~= '0' then
        redis.call('HSET', W, 'finished', 0, 'state', f[1] == 'cancelled' and 'cancelled' or 'running')
        redis.call('PERSIST', W)
      end
      return
    end
    local state = f[1]
    if state ~= 'cancelled' then state = tonumber(f[3]) > 0 and 'failed' or 'succeeded' end
    -- a finished workflow changes state only when a retried node that
    -- reopened nothing succeeded: failed becomes succeeded
    if f[4] ~= '0' and state == f[1] then return end
    redis.call('HSET', W, 'finished', now, 'state', state)
    if state == 'succeeded' then redis.call('HSET', W, 'why', '', 'why_node', '', 'why_id', '') end
    local ret = tonumber(f[5])
    if ret > 0 then redis.call('PEXPIRE', W, ret) end
  end

  -- note records, in run r, node x (task id) reaching outcome ("s" or
  -- "d"): from enqueued to either, or from dead to succeeded (an operator
  -- retried it, which resumes the graph below it). Anything else changes
  -- nothing. It reports whether the state changed; finish does the rest.
  local function note(r, x, id, outcome, result, err)
    local n = node(r, x, true)
    if not n or not (n[1] == 'p' or (n[1] == 'd' and outcome == 's')) then return false end
    if outcome == 's' then
      if result and result ~= '' then redis.call('HSET', r.W, 'r:' .. x, result) end
      -- only a dead node has an error to drop
      if n[1] == 'd' then redis.call('HDEL', r.W, 'x:' .. x) end
    else
      redis.call('HSET', r.W, 'x:' .. x, err)
      -- a cancelled workflow keeps its reason: its tasks die of the cancel
      if redis.call('HGET', r.W, 'state') ~= 'cancelled' then
        redis.call('HSET', r.W, 'why', err, 'why_node', x, 'why_id', id)
      end
    end
    set(r, x, n, outcome)
    return true
  end

  -- finish releases what run r's outcomes freed, writes its changes and
  -- checks whether the workflow finished.
  local function finish(r)
    run(r, r.now)
    flush(r)
    check(r.W, r.now)
  end

  WF = {effect = effect, count = count, start = start, parse = parse, node = node, load = load, dirty = dirty,
    set = set, run = run, chunks = chunks, flush = flush, check = check, note = note, finish = finish}
  return WF
end
