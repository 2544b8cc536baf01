-- wf_settings reads, once a run, whether the workflow was cancelled, how
-- its nodes are released (dr), its join nodes (join: see wf_joined),
-- whether it is a batch (a gate: see wf_run_release), and whether an
-- upper-case edge letter may be trusted (sole: see wf_spread_success):
-- a node's parents are fixed when it is recorded, unless an extension
-- makes a new node a parent of it (queue.Before), which sets ext, and a
-- cancelled workflow releases nothing. With more, a list of W's fields,
-- it reads them in the same call and returns all it read, their values
-- from the 6th on.
local function wf_settings(r, more)
  if r.cancelled ~= nil then return end
  local f = redis.call('HMGET', r.W, 'state', 'dr', 'ext', 'join', 'gate', unpack(more or {}))
  r.cancelled = f[1] == 'cancelled'
  r.sole = not r.cancelled and not f[3]
  r.join, r.joins, r.batch = f[4] or false, {}, f[5] ~= false and f[5] ~= nil
  for x in string.gmatch(f[4] or '', '%S(%S+)') do r.joins[x] = true end
  if f[2] and f[2] ~= '' then
    local size, cap = string.match(f[2], '^(%d+) (%d+)$')
    r.size, r.cap = tonumber(size), tonumber(cap)
    r.prefix = string.match(r.H, '^{(.*):flows:%d+}$')
  end
  return f
end
