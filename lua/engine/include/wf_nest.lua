--@include wf_open_to
--@include wf_join_add
--@include wf_taskless
-- wf_nest records a new workflow as taskless node x of its parent P in
-- home H, at once enqueued: the new workflow's end moves it
-- (include/wf_check.lua), and the parent's join nodes wait for it too.
-- inside says the caller is a task of P; max is the default bound of
-- nodes. With check, it only returns what it would refuse, writing
-- nothing.
local function wf_nest(H, P, x, inside, check, now, max)
  local f = redis.call('HMGET', P, 'state', 'finished', 'n', 'max', 'gate', 'join')
  local refused, pjoin = wf_open_to(P, f, inside)
  if refused then return refused end
  if tonumber(f[3]) + 1 > (tonumber(f[4]) or max) then return {FLOW_TOO_BIG, tonumber(f[3]) + 1, 0} end
  if redis.call('HEXISTS', P, 's:' .. x) == 1 then return {FLOW_NAME_TAKEN, x} end
  if check then return nil end
  local wf = wf_lib()
  local r = wf.start(H, P, now)
  redis.call('HSET', P, 'm:' .. x, wf_taskless())
  redis.call('HINCRBY', P, 'n', 1)
  r.nodes[x] = wf.parse('p')
  wf.dirty(r, x)
  r.open, r.counts.p = 1, 1
  if pjoin then wf_join_add(r, pjoin, 1) end
  wf.flush(r)
  return nil
end
