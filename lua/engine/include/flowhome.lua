--@include workflow
--@include flow_out_put
--@include chain_apply
-- A flow home H ({<prefix>:flows:<n>}) keeps its batches and workflows
-- (and the chains 0.1.0 enqueued, include/chain_apply.lua) and an outbox
-- of tasks to deliver (H:out, H:outmsg). Each flow task's outcome arrives
-- here as a notification (see flow_notify.lua) and is applied as a change
-- of that task's state, never as a count, so the same notification
-- applied twice changes nothing. Callbacks and released nodes are put into
-- the outbox in the same script that decides they are due, under flags
-- that say they were: they are decided once.

-- RECENT_CAP bounds each home's feed of recent flows.
local RECENT_CAP = 1000

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

-- flow_apply applies one notification {ref, member, outcome, result,
-- error} (wire.FlowNote) at home H. A ref that does not parse is dropped.
-- A workflow's outcomes go into its run in runs (wid -> run), which the
-- caller finishes once for all of them (include/workflow.lua's finish).
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
        r = wf_lib().start(H, H .. ':w:' .. wid, now)
        runs[wid] = r
      end
      return wf_lib().note(r, x, n[2], n[3], n[4], n[5] or '')
    end
    return false
  end
  if kind == 'c' then
    local cid, k = string.match(rest, '^(.+):(%d+)$')
    if cid then return chain_apply(H, cid, tonumber(k), n[3], n[4], n[5] or '', now) end
  end
  return false
end
