--@include wf_start
-- wf_check finishes the workflow when no node is open (its state: failed
-- when a node is dead or failed, else succeeded, unless cancelled), and
-- sets its retention; a finished one a retried node opened again runs
-- again. A nested workflow (its field up, "<parent> <node>": a batch in
-- the same home) tells its parent: the parent's node, a taskless one,
-- succeeds when W succeeded and is dead otherwise. A failed W that a
-- retry makes succeed tells it again, and the node moves from dead to
-- succeeded, as a retried task's would. f: those fields, when wf_flush
-- just read them.
local function wf_check(W, now, f)
  f = f or redis.call('HMGET', W, 'state', 'open', 'bad', 'finished', 'ret', 'up')
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
  local pid, x = string.match(f[6] or '', '^(%S+) (%S+)$')
  if not pid then return end
  local H = string.match(W, '^(.*}):w:')
  local r = wf_start(H, H .. ':w:' .. pid, now)
  local ok = state == 'succeeded'
  local why = ok and '' or ('workflow ' .. string.match(W, ':w:(.*)$') .. ' ' .. state)
  if wf_more().note(r, x, '', ok and WF_STATE.succeeded or WF_STATE.dead, '', why) then wf_run_lib().finish(r) end
end
