-- A flow home H ({<prefix>:flows:<n>}) keeps its chains and batches and
-- an outbox of tasks to deliver (H:out, H:outmsg). Each flow task's
-- outcome arrives here as a notification (see flow_notify.lua) and is
-- applied as a change of that task's state, never as a count, so the same
-- notification applied twice changes nothing. Callbacks and next links
-- are put into the outbox in the same script that decides they are due,
-- under flags that say they were: they are decided once.

-- RECENT_CAP bounds each home's feed of recent flows.
local RECENT_CAP = 1000

-- flow_out_put puts delivery entry (wire.Delivery) for task id into H's
-- outbox, visible to sweepers at time at (ms).
local function flow_out_put(H, id, entry, at)
  redis.call('ZADD', H .. ':out', at, id)
  redis.call('HSET', H .. ':outmsg', id, entry)
end

-- flow_recent records a new flow ("b:<id>", "c:<id>") in H's recent feed.
local function flow_recent(H, member, now)
  local key = H .. ':recent'
  redis.call('ZADD', key, now, member)
  local over = redis.call('ZCARD', key) - RECENT_CAP
  if over > 0 then redis.call('ZREMRANGEBYRANK', key, 0, over - 1) end
end

-- flow_due returns how many outbox entries are visible at now.
local function flow_due(H, now)
  return redis.call('ZCOUNT', H .. ':out', '-inf', now)
end

local batch_apply -- defined below; batch_check and it call each other

-- batch_check finishes batch bid when it is closed and nothing is pending:
-- the complete callback goes out (once: cbc_fired), the success callback
-- too when every member succeeded (once: cbs_fired, possibly later than
-- the first, after dead members were retried), and the keys get the
-- retention as TTL. Once the callbacks that went out have run (their
-- outcomes come back like members': cbs_done, cbc_done), the parent batch
-- is told (as its member "b:<bid>"): succeeded when every member and
-- callback did, else dead. So a parent's callbacks run after its
-- children's.
local function batch_check(H, bid, now)
  local bk = H .. ':b:' .. bid
  -- most calls (a member of a running batch finished) stop here
  local open = redis.call('HMGET', bk, 'closed', 'pending')
  if open[1] ~= '1' or tonumber(open[2]) > 0 then return end
  local f = redis.call('HMGET', bk, 'closed', 'pending', 'total', 'succeeded', 'finished',
    'cbs', 'cbs_fired', 'cbc', 'cbc_fired', 'parent', 'told', 'ret', 'cbs_id', 'cbc_id',
    'cbs_done', 'cbc_done')
  local all_ok = tonumber(f[4]) == tonumber(f[3])
  if f[5] == '0' then redis.call('HSET', bk, 'finished', now) end
  local cbc_out, cbs_out = f[9] ~= '0', f[7] ~= '0'
  if f[8] ~= '' and not cbc_out then
    flow_out_put(H, f[14], f[8], now)
    redis.call('HSET', bk, 'cbc_fired', now)
    cbc_out = true
  end
  if all_ok and f[6] ~= '' and not cbs_out then
    flow_out_put(H, f[13], f[6], now)
    redis.call('HSET', bk, 'cbs_fired', now)
    cbs_out = true
  end
  local ret = tonumber(f[12])
  if ret > 0 then
    redis.call('PEXPIRE', bk, ret)
    redis.call('PEXPIRE', H .. ':bm:' .. bid, ret)
  end
  if f[10] == '' then return end
  if (cbc_out and f[16] == '') or (cbs_out and f[15] == '') then return end -- a callback runs
  local told = (all_ok and f[15] ~= 'd' and f[16] ~= 'd') and 's' or 'd'
  if f[11] ~= told and f[11] ~= 's' then
    redis.call('HSET', bk, 'told', told)
    batch_apply(H, f[10], 'b:' .. bid, told, now)
  end
end

-- batch_callback records a callback's outcome (member is its task ID):
-- it reports whether member is one of bid's callbacks.
local function batch_callback(H, bid, member, outcome, now)
  local bk = H .. ':b:' .. bid
  local f = redis.call('HMGET', bk, 'cbs_id', 'cbc_id', 'cbs_done', 'cbc_done')
  local field, cur
  if member == f[1] then field, cur = 'cbs_done', f[3]
  elseif member == f[2] then field, cur = 'cbc_done', f[4]
  else return false end
  if cur and cur ~= 's' and cur ~= outcome then
    redis.call('HSET', bk, field, outcome)
    batch_check(H, bid, now)
  end
  return true
end

-- batch_apply moves member of batch bid to outcome ("s" or "d"): from
-- pending to either, or from dead to succeeded (an operator retried it).
-- Anything else (a repeat, a late "d" after "s", an unknown member or
-- batch) changes nothing. It reports whether the state changed.
batch_apply = function(H, bid, member, outcome, now)
  local mk = H .. ':bm:' .. bid
  local st = redis.call('HGET', mk, member)
  if not st then
    batch_callback(H, bid, member, outcome, now)
    return false
  end
  if st == outcome or st == 's' then return false end
  local bk = H .. ':b:' .. bid
  redis.call('HSET', mk, member, outcome)
  redis.call('HINCRBY', bk, st == 'p' and 'pending' or 'dead', -1)
  redis.call('HINCRBY', bk, outcome == 's' and 'succeeded' or 'dead', 1)
  batch_check(H, bid, now)
  return true
end

-- chain_apply records link k of chain cid reaching outcome: success
-- stores its result and puts the next link into the outbox (or finishes
-- the chain); dead stops the chain there, with the error. A dead link
-- that succeeds later (retried) resumes the chain. Repeats change nothing.
local function chain_apply(H, cid, k, outcome, result, err, now)
  local ck = H .. ':c:' .. cid
  local st = redis.call('HGET', ck, 's:' .. k)
  if not st or st == 's' or st == 'w' or st == outcome then return false end
  redis.call('HSET', ck, 's:' .. k, outcome)
  if outcome == 'd' then
    redis.call('HSET', ck, 'state', 'stopped', 'stop_link', k, 'stop_err', err, 'stopped_at', now)
    -- a stopped chain is kept for the retention, for its dead link to be
    -- retried; one never retried expires then
    local ret = tonumber(redis.call('HGET', ck, 'ret'))
    if ret > 0 then redis.call('PEXPIRE', ck, ret) end
    return true
  end
  redis.call('PERSIST', ck) -- it runs again (a retried link succeeded)
  if result and result ~= '' then redis.call('HSET', ck, 'r:' .. k, result) end
  local n = tonumber(redis.call('HGET', ck, 'n'))
  if k < n then
    local nxt = k + 1
    local f = redis.call('HMGET', ck, 'i:' .. nxt, 'e:' .. nxt)
    redis.call('HSET', ck, 's:' .. nxt, 'p', 'cur', nxt, 'state', 'running', 'stop_link', 0, 'stop_err', '')
    flow_out_put(H, f[1], f[2], now)
  else
    redis.call('HSET', ck, 'state', 'done', 'finished', now, 'stop_link', 0, 'stop_err', '')
    local ret = tonumber(redis.call('HGET', ck, 'ret'))
    if ret > 0 then redis.call('PEXPIRE', ck, ret) end
  end
  return true
end

-- Workflows. A workflow wid keeps everything in one hash W = H:w:<wid>:
-- its state and counters (state, n, edges, open: nodes waiting or
-- enqueued, bad: nodes dead or failed, cnt_<state>: nodes per state; why,
-- and the node and task ID that died of it, why_node and why_id, or
-- "cancelled"; created, finished, ret), and
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

local WF_OPEN = {w = true, p = true}
local WF_BAD = {d = true, f = true}
local WF_WAITS = {w = true, f = true, k = true}

-- wf_effect is what parent state ps means to a child over edge e:
-- 'u' unfinished, 'f' fail, 'k' skip, '' satisfied.
local function wf_effect(ps, e)
  if ps == 'w' or ps == 'p' then return 'u' end
  if ps == 's' or e == 'r' then return '' end
  return e
end

-- wf_count adds d to the counter of effect ef of node entry n.
local function wf_count(n, ef, d)
  if ef == 'u' then n[2] = n[2] + d elseif ef == 'f' then n[3] = n[3] + d elseif ef == 'k' then n[4] = n[4] + d end
end

-- A run is one script's work on workflow W: the nodes it read ({state,
-- unfinished, fail, skip}, and c: their children once read), the ones it
-- changed, and what it puts into the outbox, all written once by
-- wf_flush.
local function wf_start(H, W)
  return {H = H, W = W, nodes = {}, dirty = {}, order = {}, work = {}, open = 0, bad = 0,
    counts = {}, out = {}, outmsg = {}, gone = {}, released = {}}
end

-- wf_parse reads a node's stored state.
local function wf_parse(v)
  local st, u, f, k = string.match(v, '^(%a) (%d+) (%d+) (%d+)$')
  if st then return {st, tonumber(u), tonumber(f), tonumber(k)} end
  return {v, 0, 0, 0}
end

-- wf_node returns node x's entry, or nil when W has no such node. With
-- children, a first read takes its children list in the same call, for a
-- node about to change state (wf_set reads it then).
local function wf_node(r, x, children)
  local n = r.nodes[x]
  if n == nil then
    if children then
      local v = redis.call('HMGET', r.W, 's:' .. x, 'c:' .. x)
      n = v[1] and wf_parse(v[1]) or false
      if n then n.c = v[2] or false end
    else
      local v = redis.call('HGET', r.W, 's:' .. x)
      n = v and wf_parse(v) or false
    end
    r.nodes[x] = n
  end
  return n or nil
end

local function wf_dirty(r, x)
  if not r.dirty[x] then
    r.dirty[x] = true
    r.order[#r.order + 1] = x
  end
end

-- wf_set moves node x (entry n) to state new: the workflow's counters,
-- and its waiting children's, which are queued for evaluation.
local function wf_set(r, x, n, new)
  local st = n[1]
  n[1] = new
  wf_dirty(r, x)
  r.open = r.open + (WF_OPEN[new] and 1 or 0) - (WF_OPEN[st] and 1 or 0)
  r.bad = r.bad + (WF_BAD[new] and 1 or 0) - (WF_BAD[st] and 1 or 0)
  r.counts[st] = (r.counts[st] or 0) - 1
  r.counts[new] = (r.counts[new] or 0) + 1
  local cs = n.c
  if cs == nil then cs = redis.call('HGET', r.W, 'c:' .. x) end
  if not cs then return end
  for _, ch in ipairs(cmsgpack.unpack(cs)) do
    local a, b = wf_effect(st, ch[2]), wf_effect(new, ch[2])
    if a ~= b then
      local c = wf_node(r, ch[1])
      if c and WF_WAITS[c[1]] then
        wf_count(c, a, -1)
        wf_count(c, b, 1)
        wf_dirty(r, ch[1])
        r.work[#r.work + 1] = ch[1]
      end
    end
  end
end

-- wf_run evaluates the queued nodes, and those their changes queue: a
-- node waiting, failed or skipped takes the state its counters give; one
-- whose parents all allow it is released into the outbox, visible at at.
local function wf_run(r, at)
  -- formatted once: a number argument is formatted at every use
  local ats = string.format('%d', at)
  local i, work = 1, r.work
  while work[i] ~= nil do
    local x = work[i]
    i = i + 1
    local n = wf_node(r, x)
    if n and WF_WAITS[n[1]] then
      local new = 'p'
      if n[3] > 0 then new = 'f' elseif n[2] > 0 then new = 'w' elseif n[4] > 0 then new = 'k' end
      if new == 'p' then
        -- a cancelled workflow releases nothing: a node it frees is cancelled
        if r.cancelled == nil then r.cancelled = redis.call('HGET', r.W, 'state') == 'cancelled' end
        if r.cancelled then new = 'x' end
      end
      if new ~= n[1] then
        if new == 'p' then
          local v = redis.call('HMGET', r.W, 'm:' .. x, 'e:' .. x, 'c:' .. x)
          local id = cmsgpack.unpack(v[1])[1]
          r.out[#r.out + 1], r.out[#r.out + 2] = ats, id
          r.outmsg[#r.outmsg + 1], r.outmsg[#r.outmsg + 2] = id, v[2]
          r.gone[#r.gone + 1] = 'e:' .. x
          r.released[#r.released + 1] = id
          n.c = v[3] or false
        end
        wf_set(r, x, n, new)
      end
    end
  end
end

-- wf_chunks calls cmd on key with args, at most step of them per call.
local function wf_chunks(cmd, key, args, step)
  for i = 1, #args, step do
    redis.call(cmd, key, unpack(args, i, math.min(i + step - 1, #args)))
  end
end

-- wf_flush writes what run r changed.
local function wf_flush(r)
  local kv = {}
  for _, x in ipairs(r.order) do
    local n = r.nodes[x]
    kv[#kv + 1] = 's:' .. x
    kv[#kv + 1] = WF_WAITS[n[1]] and string.format('%s %d %d %d', n[1], n[2], n[3], n[4]) or n[1]
  end
  wf_chunks('HSET', r.W, kv, 1000)
  if r.open ~= 0 then redis.call('HINCRBY', r.W, 'open', r.open) end
  if r.bad ~= 0 then redis.call('HINCRBY', r.W, 'bad', r.bad) end
  for st, d in pairs(r.counts) do
    if d ~= 0 then redis.call('HINCRBY', r.W, 'cnt_' .. st, d) end
  end
  wf_chunks('HDEL', r.W, r.gone, 1000)
  wf_chunks('ZADD', r.H .. ':out', r.out, 1000)
  wf_chunks('HSET', r.H .. ':outmsg', r.outmsg, 1000)
  r.order, r.dirty, r.gone, r.out, r.outmsg, r.open, r.bad, r.counts = {}, {}, {}, {}, {}, 0, 0, {}
end

-- wf_check finishes the workflow when no node is open (its state: failed
-- when a node is dead or failed, else succeeded, unless cancelled), and
-- sets its retention; a finished one a retried node opened again runs
-- again.
local function wf_check(W, now)
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

-- wf_note records, in run r, node x (task id) reaching outcome ("s" or
-- "d"): from
-- enqueued to either, or from dead to succeeded (an operator retried it,
-- which resumes the graph below it). Anything else changes nothing. It
-- reports whether the state changed; wf_finish does the rest.
local function wf_note(r, x, id, outcome, result, err)
  local n = wf_node(r, x, true)
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
  wf_set(r, x, n, outcome)
  return true
end

-- wf_finish releases what run r's outcomes freed, writes its changes and
-- checks whether the workflow finished.
local function wf_finish(r, now)
  wf_run(r, now)
  wf_flush(r)
  wf_check(r.W, now)
end

-- flow_apply applies one notification {ref, member, outcome, result,
-- error} (wire.FlowNote) at home H. A ref that does not parse is dropped.
-- A workflow's outcomes go into its run in runs (wid -> run), which the
-- caller finishes once for all of them (wf_finish).
local function flow_apply(H, note, now, runs)
  local ok, n = pcall(cmsgpack.unpack, note)
  if not ok or type(n) ~= 'table' or type(n[1]) ~= 'string' then return false end
  local kind, rest = string.match(n[1], '^([bcw])%d+:(.+)$')
  if kind == 'b' then return batch_apply(H, rest, n[2], n[3], now) end
  if kind == 'w' then
    local wid, x = string.match(rest, '^([^:]+):(.+)$')
    if wid then
      local r = runs[wid]
      if not r then
        r = wf_start(H, H .. ':w:' .. wid)
        runs[wid] = r
      end
      return wf_note(r, x, n[2], n[3], n[4], n[5] or '')
    end
    return false
  end
  if kind == 'c' then
    local cid, k = string.match(rest, '^(.+):(%d+)$')
    if cid then return chain_apply(H, cid, tonumber(k), n[3], n[4], n[5] or '', now) end
  end
  return false
end
