-- wf_settings reads, once a run, whether the workflow was cancelled, how
-- its nodes are released (dr), whether a node was given a parent after
-- it was recorded (ext: see wf_sole), its join nodes (join: see
-- wf_joined), and whether it is a batch (a gate: see wf_run_release).
local function wf_settings(r)
  if r.cancelled ~= nil then return end
  local f = redis.call('HMGET', r.W, 'state', 'dr', 'ext', 'join', 'gate')
  r.cancelled = f[1] == 'cancelled'
  r.sole = not r.cancelled and not f[3]
  r.join, r.joins, r.batch = f[4] or false, {}, f[5] ~= false and f[5] ~= nil
  for x in string.gmatch(f[4] or '', '%S(%S+)') do r.joins[x] = true end
  if f[2] and f[2] ~= '' then
    local size, cap = string.match(f[2], '^(%d+) (%d+)$')
    r.size, r.cap = tonumber(size), tonumber(cap)
    r.prefix = string.match(r.H, '^{(.*):flows:%d+}$')
  end
end
