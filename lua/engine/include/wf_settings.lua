-- wf_settings reads, once a run, whether the workflow was cancelled, how
-- its nodes are released (dr), and whether a node was given a parent
-- after it was recorded (ext: see wf_sole).
local function wf_settings(r)
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
