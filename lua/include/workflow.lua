--@include closed
--@include record
--@include pending
-- Workflows. A workflow wid keeps everything in one hash W = H:w:<wid>:
-- its state and counters (state, n, edges, open: nodes waiting or
-- enqueued, bad: nodes dead or failed, cnt_<state>: nodes per state; why,
-- and the node and task ID that died of it, why_node and why_id, or
-- "cancelled"; created, finished, ret; dr, "<shard size> <feed cap>",
-- when its nodes are released straight into their queues), and
-- per node name x: m:x {task ID, queue, type, partition} and with dr
-- {..., partitions, at, in}, its route (cmsgpack); s:x its state,
-- followed while it waits by its parents' effects, "<state> <unfinished>
-- <fail> <skip>", or while it waits with no parent failing or skipping
-- it, the common case, its unfinished parents alone (a number); c:x its
-- children, each name after its edge's letter, separated by spaces ("fa
-- rb"; recorded before, {{name, edge}, ...} in cmsgpack: see kids); e:x
-- its task until it is
-- released: its delivery (wire.Delivery), or with
-- dr its message, what its queue gets, read with no decoding, after its
-- route when the route takes the common layout (wire.NodeTask: see
-- split); r:x its result; x:x its error. A
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
  local byte, find, sub = string.byte, string.find, string.sub
  local OPEN = {w = true, p = true}
  -- an edge's letter: upper case when the parent is its child's only one
  local EDGE = {f = 'f', r = 'r', k = 'k', F = 'f', R = 'r', K = 'k'}
  local BAD = {d = true, f = true}
  local WAITS = {w = true, f = true, k = true}
  -- The entries of the nodes a run moves the common ways, an enqueued
  -- node acked (acked) and a waiting one released by its only parent
  -- (spread): shared, since after the move a run only reads them (only
  -- waiting nodes change again), and their states go straight into r.kv:
  -- neither allocates a table per node.
  local SUCCEEDED = {'s', 0, 0, 0, false, nil, true}
  local RELEASED = {'p', 0, 0, 0, false, nil, true}

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

  -- kids returns children list cs in its spaced form. A list recorded
  -- in cmsgpack (its first byte 0x90 or above; a spaced one opens with a
  -- letter) is turned into it. Reading the spaced form with find and sub
  -- costs a quarter of what cmsgpack's tables cost.
  local function kids(cs)
    local b = byte(cs, 1)
    if not b or b < 0x80 then return cs end
    local out = {}
    for i, ch in ipairs(cmsgpack.unpack(cs)) do out[i] = ch[2] .. ch[1] end
    return table.concat(out, ' ')
  end

  -- split reads a node's task e as wire.NodeTask writes it, and
  -- returns its task ID, queue, partition and message; nil for a bare
  -- message or a delivery, which open with a msgpack array.
  local function split(e)
    local a, b, p1, p2 = byte(e, 1, 4)
    if not p2 or a == 0 or a >= 0x80 then return nil end
    local q = a + 5
    return sub(e, 5, q - 1), sub(e, q, q + b - 1), p1 * 256 + p2, sub(e, q + b)
  end

  -- A run is one script's work on workflow W at time now: the nodes it
  -- read (entries, as parse makes them), the ones it changed (order, and
  -- kv: the states of nodes with shared entries), and what it enqueues
  -- or puts into the outbox, all written once by flush.
  local function start(H, W, now)
    return {H = H, W = W, now = now, nodes = {}, order = {}, ok = 0, work = {}, rel = {}, open = 0, bad = 0,
      counts = {}, out = {}, outmsg = {}, gone = {}, released = {}, push = {}, pushed = {}, fan = {}, kv = {}}
  end

  -- A script meets the same few counts again and again: NUM and STR keep
  -- their conversions, each a strtod or an snprintf (a number passed to
  -- redis.call is formatted with "%.17g").
  local NUM, STR = {}, {}

  -- parse reads a node's stored state, in field key, into its entry:
  -- {state, unfinished, fail, skip, children (nil: not read, false: none),
  -- key, dirty}, all in the array part, which the constructor sizes. A
  -- number is a waiting node's unfinished parents, the common case, read
  -- without a pattern.
  local function parse(v, key)
    -- a letter alone: enqueued or finished, what an ack reads
    if #v == 1 and v >= 'a' then return {v, 0, 0, 0, nil, key, nil} end
    local u = NUM[v]
    if not u then
      u = tonumber(v)
      if u then NUM[v] = u end
    end
    if u then return {'w', u, 0, 0, nil, key, nil} end
    local st, uu, f, k = string.match(v, '^(%a) (%d+) (%d+) (%d+)$')
    if st then return {st, tonumber(uu), tonumber(f), tonumber(k), nil, key, nil} end
    return {v, 0, 0, 0, nil, key, nil}
  end

  -- stored is what flush writes for node entry n.
  local function stored(n)
    local st = n[1]
    if st == 'w' and n[3] == 0 and n[4] == 0 then
      local u = n[2]
      local v = STR[u]
      if not v then
        v = string.format('%d', u)
        STR[u] = v
      end
      return v
    end
    if WAITS[st] then return string.format('%s %d %d %d', st, n[2], n[3], n[4]) end
    return st
  end

  -- load reads the states of the nodes xs that run r has not read, and
  -- with children their children lists, 500 nodes a call: a call per node
  -- would cost a fan-out of thousands a call per child. From, to and step
  -- pick names out of xs (default: all).
  -- Each entry keeps its field's name (key) for flush.
  local function load(r, xs, children, from, to, step)
    local nodes, want, keys, nw = r.nodes, {}, {}, 0
    for i = from or 1, to or #xs, step or 1 do
      local x = xs[i]
      if nodes[x] == nil then
        nodes[x] = 0 -- asked for: read once
        nw = nw + 1
        want[nw] = x
      end
    end
    local step = children and 2 or 1
    for i = 1, nw, 500 do
      local fields, f = {}, 0
      local last = math.min(i + 499, nw)
      for j = i, last do
        local key = 's:' .. want[j]
        keys[j] = key
        f = f + 1
        fields[f] = key
        if children then
          f = f + 1
          fields[f] = 'c:' .. want[j]
        end
      end
      local v = redis.call('HMGET', r.W, unpack(fields))
      for j = i, last do
        local k = step * (j - i) + 1
        local n = false
        if v[k] then
          n = parse(v[k], keys[j])
          if children then n[5] = v[k + 1] or false end
        end
        nodes[want[j]] = n
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
    local n = r.nodes[x]
    if not n[7] then
      n[7] = true
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
    -- the children hear of it in spread, with the other changes' children
    local cs = n[5]
    if cs == false then return end
    local fan = r.fan
    local f = #fan
    fan[f + 1], fan[f + 2], fan[f + 3], fan[f + 4] = x, st, new, cs or 0
  end

  -- count_freed counts k nodes of run r moved from waiting to enqueued:
  -- no child hears of it, and the open and bad counts stay.
  local function count_freed(r, k)
    if k > 0 then
      r.counts.w = (r.counts.w or 0) - k
      r.counts.p = (r.counts.p or 0) + k
    end
  end

  -- settings reads, once a run, whether the workflow was cancelled, how
  -- its nodes are released (dr), and whether a node was given a parent
  -- after it was recorded (ext: see sole).
  local function settings(r)
    if r.cancelled ~= nil then return end
    local f = redis.call('HMGET', r.W, 'state', 'dr', 'ext')
    r.cancelled = f[1] == 'cancelled'
    r.sole = not r.cancelled and not f[3]
    if f[2] and f[2] ~= '' then
      local size, cap = string.match(f[2], '^(%d+) (%d+)$')
      r.size, r.cap = tonumber(size), tonumber(cap)
      r.prefix = string.match(r.H, '^{(.*):flows:%d+}$')
    end
  end

  -- sole reports whether run r may trust an upper-case edge letter: its
  -- child has that parent alone, so the parent's success releases it.
  -- A node's parents are fixed when it is recorded, unless an extension
  -- makes a new node a parent of it (queue.Before), which sets ext; a
  -- cancelled workflow releases nothing. Either way the child's state is
  -- read, as for any other.
  local function sole(r)
    if r.cancelled == nil then settings(r) end
    return r.sole
  end

  -- unvouch stores node x's children list cs (spaced) with every edge
  -- letter in lower case, once x left failed or skipped to wait or run
  -- again. Its children heard of that state, and a child over an EdgeRun
  -- edge may have run and finished: an upper-case letter (x is the
  -- child's only parent, so x's success releases the child unread) no
  -- longer says the child waits for x. Names hold no spaces, so a letter
  -- is what opens the list or follows a space.
  local function unvouch(r, x, cs)
    local low, k = string.gsub(' ' .. cs, ' ([FRK])', function(c) return ' ' .. string.lower(c) end)
    if k == 0 then return end
    low = sub(low, 2)
    local kv = r.kv
    kv[#kv + 1], kv[#kv + 2] = 'c:' .. x, low
    r.nodes[x][5] = low
  end

  -- spread applies the state changes set queued to their waiting
  -- children's counters, and queues those children for evaluation. The
  -- children lists not read yet come in one call, and so do the children.
  local function spread(r)
    local fan, nodes = r.fan, r.nodes
    if #fan == 0 then return end
    r.fan = {}
    -- fan: per changed node its name, state before and after, and
    -- children list (0: not read yet)
    local need = {}
    for i = 1, #fan, 4 do
      if fan[i + 3] == 0 then need[#need + 1] = i end
    end
    for i = 1, #need, 500 do
      local fields, last = {}, math.min(i + 499, #need)
      for j = i, last do fields[#fields + 1] = 'c:' .. fan[need[j]] end
      local v = redis.call('HMGET', r.W, unpack(fields))
      for j = i, last do
        local f = need[j]
        local cs = v[j - i + 1] or false
        fan[f + 3] = cs
        nodes[fan[f]][5] = cs
      end
    end
    -- moves: child, effect before, effect after. A success, the common
    -- case, costs each child an unfinished parent whatever its edge, and
    -- changes nothing else: dec counts them per child, named in order,
    -- with no move per parent.
    local moves, m = {}, 0
    local dec, named, nd = {}, {}, 0
    local order, rel, freed, solo = r.order, r.rel, 0, nil
    local nrel = #rel
    for i = 1, #fan, 4 do
      local cs = fan[i + 3]
      if cs then
        local st, new = fan[i + 1], fan[i + 2]
        cs = kids(cs)
        -- each child: its name from p to the space at e (none: the end),
        -- its edge's letter before p
        local p, e = 2, 0
        if OPEN[st] and new == 's' then
          while e do
            e = find(cs, ' ', p, true)
            local x = sub(cs, p, e and e - 1)
            local up = byte(cs, p - 1) < 0x61 and nodes[x] == nil
            if up and solo == nil then solo = sole(r) end
            if up and solo then
              -- x's only parent succeeded: x waits for it alone, so x is
              -- released, with no read of its state
              nodes[x] = RELEASED
              nrel = nrel + 1
              rel[nrel] = x
              freed = freed + 1
            else
              local d = dec[x]
              if d then
                dec[x] = d + 1
              else
                dec[x] = 1
                nd = nd + 1
                named[nd] = x
              end
            end
            if e then p = e + 2 end
          end
        else
          -- a node that failed or was skipped, and waits or runs again
          -- (a retry above it resumed it), vouches for no child any more
          if OPEN[new] then unvouch(r, fan[i], cs) end
          while e do
            e = find(cs, ' ', p, true)
            local edge = EDGE[sub(cs, p - 1, p - 1)]
            local a, b = effect(st, edge), effect(new, edge)
            if a ~= b then
              moves[m + 1], moves[m + 2], moves[m + 3] = sub(cs, p, e and e - 1), a, b
              m = m + 3
            end
            if e then p = e + 2 end
          end
        end
      end
    end
    count_freed(r, freed)
    local work = r.work
    -- the counted children, read together, each take their decrements at
    -- once; a waiting one is queued for evaluation only when it may leave
    -- w: its last unfinished parent gone
    load(r, named, false, 1, nd)
    local w, o = #work, #order
    for k = 1, nd do
      local x = named[k]
      local c = nodes[x]
      if c and WAITS[c[1]] then
        c[2] = c[2] - dec[x]
        if not c[7] then
          c[7] = true
          o = o + 1
          order[o] = x
        end
        if c[2] <= 0 or c[1] ~= 'w' then
          w = w + 1
          work[w] = x
        end
      end
    end
    load(r, moves, false, 1, m, 3)
    for i = 1, m, 3 do
      local x = moves[i]
      local c = nodes[x]
      if c and WAITS[c[1]] then
        local a, b = moves[i + 1], moves[i + 2]
        if a == 'u' then c[2] = c[2] - 1 else count(c, a, -1) end
        if b ~= '' then count(c, b, 1) end
        if not c[7] then
          c[7] = true
          o = o + 1
          order[o] = x
        end
        w = w + 1
        work[w] = x
      end
    end
  end

  -- delivery returns the delivery (wire.Delivery) of message msg over
  -- route m, a node's record with dr, for the outbox, which routes it
  -- again.
  local function delivery(m, msg)
    return cmsgpack.pack({m[2], m[4], m[5], m[1], msg, m[6], m[7], '', 0})
  end

  -- group returns run r's push into partition (queue, part), made on
  -- first use.
  local function group(r, queue, part)
    local q = r.push[queue]
    if not q then
      q = {}
      r.push[queue] = q
    end
    local g = q[part]
    if not g then
      -- per task: ID, message, delivery (false: made from its route
      -- when needed), route (false: not read), node, due time
      local T = '{' .. r.prefix .. ':' .. queue .. ':' .. string.format('%d', part) .. '}'
      g = {T = T, ids = {}, msgs = {}, es = {}, ms = {}, xs = {}, due = {}, n = 0}
      q[part] = g
      r.pushed[#r.pushed + 1] = g
    end
    return g
  end

  -- outbox puts task id, of delivery e, into the home's outbox, visible
  -- at ats, for the caller or a sweeper to deliver.
  local function outbox(r, id, e, ats)
    r.out[#r.out + 1], r.out[#r.out + 2] = ats, id
    r.outmsg[#r.outmsg + 1], r.outmsg[#r.outmsg + 2] = id, e
    r.released[#r.released + 1] = id
  end

  -- add puts node x's task (id, message msg, due at due, route raw or
  -- false: not read, delivery d or false: none recorded) into run r's
  -- push into partition (queue, part).
  local function add(r, x, id, queue, part, msg, due, raw, d)
    -- a run's releases mostly go to one partition
    local g = r.lastg
    if not g or r.lastq ~= queue or r.lastp ~= part then
      g = group(r, queue, part)
      r.lastg, r.lastq, r.lastp = g, queue, part
    end
    local k = g.n + 1
    g.n = k
    g.ids[k], g.msgs[k], g.es[k], g.ms[k], g.xs[k], g.due[k] = id, msg, d, raw, x, due
  end

  -- release sends released node x, whose route is raw (m:x) and task e,
  -- on its way, when e is not a wire.NodeTask (run reads those). With
  -- dr, e goes into its partition's push (flush writes it): a message
  -- routed by raw, or a delivery recorded before routes. Else e is its
  -- delivery, and goes into the outbox, visible at ats.
  local function release(r, x, raw, e, ats)
    local m = cmsgpack.unpack(raw)
    if r.size and m[7] then
      local due = 0
      if m[6] > 0 then due = m[6] elseif m[7] > 0 then due = r.now + m[7] end
      add(r, x, m[1], m[2], m[4], e, due, raw, false)
      return
    end
    local id = m[1]
    if r.size then
      -- {queue, partition, partitions, id, message, at, in, unique, unique ttl}
      local ok, d = pcall(cmsgpack.unpack, e)
      if ok and type(d) == 'table' and type(d[5]) == 'string' then
        local due = 0
        if d[6] > 0 then due = d[6] elseif d[7] > 0 then due = r.now + d[7] end
        add(r, x, d[4], d[1], d[2], d[5], due, raw, e)
        return
      end
      -- a delivery this script cannot read (an older producer wrote its
      -- message as binary, which cmsgpack lacks) goes the outbox's way:
      -- Go reads both
    end
    outbox(r, id, e, ats)
  end

  local push -- below

  -- run evaluates the queued nodes, and those their changes queue: a
  -- node waiting, failed or skipped takes the state its counters give;
  -- one whose parents all allow it is released (release), visible in
  -- the outbox at at. The nodes of a round of work are read together
  -- (load), and so are the released nodes' tasks, at the end.
  local function run(r, at)
    -- formatted once: a number argument is formatted at every use
    local ats = string.format('%d', at)
    r.ats = ats
    spread(r)
    local i, work, rel, nodes = 1, r.work, r.rel, r.nodes
    while work[i] ~= nil do
      local last = #work
      load(r, work, false, i, last)
      -- waiting nodes released: their moves from w to p, counted at the end
      local freed = 0
      for j = i, last do
        local x = work[j]
        local n = nodes[x]
        if n and WAITS[n[1]] then
          local st, new = n[1], 'p'
          if n[3] > 0 then new = 'f' elseif n[2] > 0 then new = 'w' elseif n[4] > 0 then new = 'k' end
          if new == 'p' then
            -- a cancelled workflow releases nothing: a node it frees is cancelled
            if r.cancelled == nil then settings(r) end
            if r.cancelled then new = 'x' end
          end
          if new ~= st then
            if new == 'p' then
              rel[#rel + 1] = x
            end
            if new == 'p' and st == 'w' then
              -- what set does for w to p, the common case: nothing changes
              -- for its children, nor the open and bad counts
              n[1] = 'p'
              dirty(r, x)
              freed = freed + 1
            else
              set(r, x, n, new)
            end
          end
        end
      end
      count_freed(r, freed)
      i = last + 1
      spread(r)
    end
    -- the released nodes' tasks: those spread released, and these; a
    -- node's route is read only when its task is not a wire.NodeTask
    local gone, nrel = r.gone, #rel
    local ng = #gone
    r.rel = {}
    for k = 1, nrel, 500 do
      local fields, last = {}, math.min(k + 499, nrel)
      local kv = r.kv
      local nk = #kv
      -- without dr every task goes by its route: read with it
      local width = r.size and 1 or 2
      for j = k, last do
        local x = rel[j]
        local e = 'e:' .. x
        local f = width * (j - k) + 1
        fields[f] = e
        if width == 2 then fields[f + 1] = 'm:' .. x end
        ng = ng + 1
        gone[ng] = e
        if nodes[x] == RELEASED then
          kv[nk + 1], kv[nk + 2] = 's:' .. x, 'p'
          nk = nk + 2
        end
      end
      local v = redis.call('HMGET', r.W, unpack(fields))
      local routed, nr = {}, 0
      for j = k, last do
        local f = width * (j - k) + 1
        local e = v[f]
        if not e then
          -- released before: its task went out then. Pushing nothing
          -- here would leave the counts wrong; no write of this run is
          -- made yet but the pushes of earlier chunks
          error('workflow ' .. r.W .. ': node ' .. rel[j] .. ' released twice: its task (e:' .. rel[j] .. ') is gone', 0)
        end
        local id, queue, part, msg
        if width == 1 and e then id, queue, part, msg = split(e) end
        if id then
          add(r, rel[j], id, queue, part, msg, 0, false, false)
        elseif width == 2 then
          release(r, rel[j], v[f + 1], e, ats)
        else
          routed[nr + 1], routed[nr + 2] = rel[j], e
          nr = nr + 2
        end
      end
      if nr > 0 then
        local ms = {}
        for i = 1, nr, 2 do ms[#ms + 1] = 'm:' .. routed[i] end
        local mv = redis.call('HMGET', r.W, unpack(ms))
        for i = 1, nr, 2 do release(r, routed[i], mv[(i + 1) / 2], routed[i + 1], ats) end
      end
      -- pushed a chunk at a time: a run's messages never all live in Lua
      for _, g in ipairs(r.pushed) do push(r, g) end
      r.push, r.pushed, r.lastg = {}, {}, nil
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
  function push(r, g)
    local T = g.T
    if rank_closed(redis.call('GET', T .. ':feed:rank')) then
      -- the routes not read yet, in one call
      local want, at = {}, {}
      for k = 1, g.n do
        if not g.es[k] and not g.ms[k] then
          want[#want + 1], at[#at + 1] = 'm:' .. g.xs[k], k
        end
      end
      if #want > 0 then
        local v = redis.call('HMGET', r.W, unpack(want))
        for i, k in ipairs(at) do g.ms[k] = v[i] end
      end
      for k, id in ipairs(g.ids) do
        outbox(r, id, g.es[k] or delivery(cmsgpack.unpack(g.ms[k]), g.msgs[k]), r.ats)
      end
      return
    end
    local keyed, plain, at, members, copies = {}, {}, {}, {}, {}
    local ids, msgs, dues, np = g.ids, g.msgs, g.due, 0
    for k = 1, g.n do
      local id, msg, due = ids[k], msgs[k], dues[k]
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
        np = np + 1
        plain[np], at[np] = msg, k
      end
    end
    pending_store(T, r.size, r.cap, keyed, plain, at, members, copies)
  end

  -- flush writes what run r changed.
  local function flush(r)
    -- a cancel sets states without a run
    spread(r)
    -- the shared entries' states first: a node moved again is in order
    local kv, order = r.kv, r.order
    local nodes, k = r.nodes, #r.kv
    r.kv = {}
    for i = 1, #order do
      local x = order[i]
      local n = nodes[x]
      local v = n[1]
      if WAITS[v] then v = stored(n) end
      kv[k + 1], kv[k + 2] = n[6] or 's:' .. x, v
      k = k + 2
      n[7] = nil
    end
    chunks('HSET', r.W, kv, 1000)
    if r.ok > 0 then
      -- successes succeed tallied: from p, open, to s
      r.open = r.open - r.ok
      r.counts.p = (r.counts.p or 0) - r.ok
      r.counts.s = (r.counts.s or 0) + r.ok
      r.ok = 0
    end
    if r.open ~= 0 then redis.call('HINCRBY', r.W, 'open', r.open) end
    if r.bad ~= 0 then redis.call('HINCRBY', r.W, 'bad', r.bad) end
    for st, d in pairs(r.counts) do
      if d ~= 0 then redis.call('HINCRBY', r.W, 'cnt_' .. st, d) end
    end
    chunks('HDEL', r.W, r.gone, 1000)
    for _, g in ipairs(r.pushed) do push(r, g) end
    chunks('ZADD', r.H .. ':out', r.out, 1000)
    chunks('HSET', r.H .. ':outmsg', r.outmsg, 1000)
    r.order, r.gone, r.out, r.outmsg, r.open, r.bad, r.counts = {}, {}, {}, {}, 0, 0, {}
    r.push, r.pushed, r.lastg = {}, {}, nil
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
    local kv = r.kv
    if outcome == 's' then
      if result and result ~= '' then kv[#kv + 1], kv[#kv + 2] = 'r:' .. x, result end
      -- only a dead node has an error to drop
      if n[1] == 'd' then r.gone[#r.gone + 1] = 'x:' .. x end
    else
      kv[#kv + 1], kv[#kv + 2] = 'x:' .. x, err
      -- a cancelled workflow keeps its reason: its tasks die of the cancel
      if redis.call('HGET', r.W, 'state') ~= 'cancelled' then
        kv[#kv + 1], kv[#kv + 2] = 'why', err
        kv[#kv + 1], kv[#kv + 2] = 'why_node', x
        kv[#kv + 1], kv[#kv + 2] = 'why_id', id
      end
    end
    set(r, x, n, outcome)
    return true
  end

  -- succeed is note of a success, for an ack, which reads its nodes first
  -- (load): an enqueued node, the common case, takes the steps of set from
  -- p to s inline, its counts tallied in r.ok for flush, and a node known
  -- to have no children tells none.
  local function succeed(r, x, id, result)
    local n = r.nodes[x]
    if not n or n[1] ~= 'p' then return note(r, x, id, 's', result, '') end
    if result ~= '' then
      local kv = r.kv
      kv[#kv + 1], kv[#kv + 2] = 'r:' .. x, result
    end
    n[1] = 's'
    if not n[7] then
      n[7] = true
      r.order[#r.order + 1] = x
    end
    r.ok = r.ok + 1
    if n[5] ~= false then
      local fan = r.fan
      local f = #fan
      fan[f + 1], fan[f + 2], fan[f + 3], fan[f + 4] = x, 'p', 's', n[5] or 0
    end
    return true
  end

  -- acked applies the successes of run r's acked nodes, r.acked, the
  -- k-th the task ids[r.at[k]] with result results[r.at[k]] (false:
  -- none). Their states and children lists come in one call per 500
  -- nodes, and an enqueued node, the common case, takes the steps of
  -- succeed inline, with no entry made twice nor call per node. Any
  -- other node goes through succeed.
  local function acked(r, ids, results)
    local xs, at, nodes = r.acked, r.at, r.nodes
    local fan, ok, kv = r.fan, 0, r.kv
    local nk = #kv
    for i = 1, #xs, 500 do
      local last = math.min(i + 499, #xs)
      local fields, f = {}, 0
      for k = i, last do
        local x = xs[k]
        fields[f + 1], fields[f + 2] = 's:' .. x, 'c:' .. x
        f = f + 2
      end
      local v = redis.call('HMGET', r.W, unpack(fields))
      for k = i, last do
        local j = 2 * (k - i) + 1
        local x, st, cs = xs[k], v[j], v[j + 1] or false
        local result = results[at[k]] or ''
        if st == 'p' and nodes[x] == nil then
          nodes[x] = SUCCEEDED
          kv[nk + 1], kv[nk + 2] = fields[j], 's'
          nk = nk + 2
          ok = ok + 1
          if result ~= '' then
            kv[nk + 1], kv[nk + 2] = 'r:' .. x, result
            nk = nk + 2
          end
          if cs then
            local nf = #fan
            fan[nf + 1], fan[nf + 2], fan[nf + 3], fan[nf + 4] = x, 'p', 's', cs
          end
        else
          if nodes[x] == nil then
            local n = st and parse(st, fields[j]) or false
            if n then n[5] = cs end
            nodes[x] = n
          end
          succeed(r, x, ids[at[k]], result)
          nk = #kv -- succeed may add writes
        end
      end
    end
    r.ok = r.ok + ok
  end

  -- finish releases what run r's outcomes freed, writes its changes and
  -- checks whether the workflow finished.
  local function finish(r)
    run(r, r.now)
    flush(r)
    check(r.W, r.now)
  end

  WF = {delivery = delivery, split = split, kids = kids, acked = acked, effect = effect, count = count, start = start, parse = parse,
    node = node, dirty = dirty, set = set, run = run, chunks = chunks, flush = flush, check = check,
    note = note, finish = finish}
  return WF
end
