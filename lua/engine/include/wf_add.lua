--@include wf_group
-- wf_add puts node x's task (id, message msg, due at due, route raw or
-- false: not read, delivery d or false: none recorded) into run r's
-- push into partition (queue, part).
local function wf_add(r, x, id, queue, part, msg, due, raw, d)
  -- a run's releases mostly go to one partition
  local g = r.lastg
  if not g or r.lastq ~= queue or r.lastp ~= part then
    g = wf_group(r, queue, part)
    r.lastg, r.lastq, r.lastp = g, queue, part
  end
  local k = g.n + 1
  g.n = k
  g.ids[k], g.msgs[k], g.es[k], g.ms[k], g.xs[k], g.due[k] = id, msg, d, raw, x, due
end
