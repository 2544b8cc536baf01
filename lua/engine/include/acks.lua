--@include time
--@include limits
--@include feed
--@include stats
--@include unique
--@include workflow
-- ack_tasks finishes the tasks of partition T that succeeded, given in
-- argv from index from on: the number of fields per task, 2, 3, 4, 5 or
-- 7, then the tasks: id, token and, with 4, retention (ms, 0 = not kept) and
-- unique key ("" = none), with 5 the task's flow ref ("" = none: see
-- wire.FlowRef), and with 7 its workflow's key and its node's name when
-- this script may write there ("" = it may not); 2 stands for retention
-- 0, no unique key and no flow, the common case, in half the arguments;
-- 3 stands for nodes of one workflow, with retention 0 and no unique key,
-- and has that workflow's key before the tasks, then per task its id,
-- token and node's name.
-- A flow task's success is appended to T:notify (wire.FlowNote, with a
-- chain link's result), atomically with its ack; workers forward it to
-- the flow's home (flow_notify.lua). A workflow node's success with its
-- workflow's key given is applied there in this script instead: on one
-- Redis server, the nodes it frees are enqueued with its ack
-- (include/workflow.lua).
-- A task is finished only under the token of its current lease: a stale
-- token (the lease was lost and the task handed to another worker)
-- changes nothing. Tasks with a retention stay in the
-- done feed until it passes (or the feed's cap trims them); the others
-- leave no record. It returns one code per task: 1 acked, 0 stale token or
-- already finished. ack runs it alone; pop and claim run it first, so a
-- busy worker's acks ride in its next dequeue.
local function ack_tasks(T, now, argv, from, cap, size)
  local codes, ids, n = {}, {}, 0
  local width = tonumber(argv[from])
  if not width then return codes end
  -- width 3: the workflow key, once, then per task its ID, token and node
  local first, wkey = from + 1, ''
  if width == 3 then first, wkey = from + 2, argv[from + 1] end
  for i = first, #argv, width do
    n = n + 1
    ids[n] = argv[i]
  end
  if n == 0 then return codes end
  local statek, msgk = T .. ':state', T .. ':msg'
  local raws = redis.call('HMGET', statek, unpack(ids))
  -- the tasks of one pop share a record, byte for byte: unpack it once
  local unpacked = {}
  local done, nd = {}, 0
  local gone, kept, keptStates, expiries -- set once a task is kept
  local notes -- flow notifications, set with the first
  local runs, nodes, nn -- workflows changed here: W -> run, and run, node, task ID per node
  local released -- group -> its tasks acked, set with the first
  local uniques, nu = {}, 0 -- unique key, task ID: the locks to release
  for k = 1, n do
    local raw, code = raws[k], 0
    if raw then
      local r = unpacked[raw]
      if not r then
        r = cmsgpack.unpack(raw)
        unpacked[raw] = r
      end
      local i = first + width * (k - 1)
      if r[1] == 'active' and r[3] == tonumber(argv[i + 1]) then
        code = 1
        local id = ids[k]
        nd = nd + 1
        done[nd] = id
        if r[10] and r[10] ~= '' then
          released = released or {}
          released[r[10]] = (released[r[10]] or 0) + 1
        end
        local retention = width >= 4 and tonumber(argv[i + 2]) or 0
        if retention > 0 then
          if not kept then
            kept, keptStates, expiries, gone = {}, {}, {}, {}
            for x = 1, nd - 1 do gone[x] = done[x] end
          end
          local d = record_decode(raw) -- a table of its own: r may be shared
          d[1], d[8], d[10] = 'done', now, ''
          keptStates[#keptStates + 1] = id
          keptStates[#keptStates + 1] = cmsgpack.pack(d)
          expiries[#expiries + 1] = now + retention
          expiries[#expiries + 1] = id
          kept[#kept + 1] = id
        elseif gone then
          gone[#gone + 1] = id
        end
        -- a workflow node whose workflow this script may write to
        local W, x = wkey, nil
        if width == 3 then x = argv[i + 2] elseif width == 7 then W, x = argv[i + 5], argv[i + 6] end
        if W ~= '' then
          -- its result is read below, with the others
          if not runs then runs, nodes, nn = {}, {}, 0 end
          local r = runs[W]
          if not r then
            r = wf_lib().start(string.match(W, '^(.*}):w:'), W, now)
            runs[W] = r
            r.acked, r.at, r.na = {}, {}, 0
          end
          nodes[nn + 1], nodes[nn + 2], nodes[nn + 3] = r, x, id
          nn = nn + 3
          local a = r.na + 1
          r.na = a
          r.acked[a], r.at[a] = x, nn / 3
        elseif width >= 5 and argv[i + 4] ~= '' then
          local flow = argv[i + 4]
          local kind = string.byte(flow, 1)
          local result = ''
          if kind == 99 or kind == 119 then -- 'c', 'w': a chain link or workflow node passes its result on
            result = redis.call('HGET', T .. ':result', id) or ''
          end
          notes = notes or {}
          notes[#notes + 1] = cmsgpack.pack({flow, id, 's', result, ''})
        end
        local unique = width >= 4 and argv[i + 3] or ''
        if unique ~= '' then
          uniques[nu + 1], uniques[nu + 2] = unique, id
          nu = nu + 2
        end
      end
    end
    codes[k] = code
  end
  if nd == 0 then return codes end
  -- The workflows first: reading a workflow's hash is the one part of an
  -- ack that can fail on what it reads (a bad field), and it fails
  -- before its own writes (include/workflow.lua), so a failed call has
  -- written nothing of the acks' own. The worker then acks the batch's
  -- tasks one by one, and the task whose ack still fails goes dead
  -- (worker/outcome.go).
  if nodes then
    local wf = wf_lib()
    local ids = {}
    for k = 3, nn, 3 do ids[k / 3] = nodes[k] end
    local results = redis.call('HMGET', T .. ':result', unpack(ids))
    for _, r in pairs(runs) do wf.acked(r, ids, results) end
    -- in the order of the acks, as they came
    for k = 1, nn, 3 do
      local r = nodes[k]
      if r.acked then
        r.acked = nil
        wf.finish(r)
      end
    end
  end
  if released then keys_release(T, released, size) end
  if notes then redis.call('RPUSH', T .. ':notify', unpack(notes)) end
  for k = 1, nu, 2 do unique_release(T, uniques[k], uniques[k + 1], 'done') end
  gone = gone or done -- none kept: every acked task is gone
  redis.call('ZREM', T .. ':active', unpack(done))
  redis.call('HDEL', T .. ':feed:msg', unpack(done))
  if #gone > 0 then
    redis.call('HDEL', msgk, unpack(gone))
    redis.call('HDEL', statek, unpack(gone))
    -- a handler's progress, result and steps go with the task (kept ones
    -- stay until its retention ends: reap, delete_tasks)
    record_forget(T, gone)
  end
  if kept then
    redis.call('HSET', statek, unpack(keptStates))
    redis.call('ZADD', T .. ':expire', unpack(expiries))
    local _, trimmed = feed_append(T .. ':done', T .. ':done:rank', kept, cap)
    for _, id in ipairs(trimmed) do
      redis.call('HDEL', msgk, id)
      redis.call('HDEL', statek, id)
      record_forget(T, {id})
      redis.call('ZREM', T .. ':expire', id)
    end
  end
  stats_add(T, 'done', now, nd)
  return codes
end
