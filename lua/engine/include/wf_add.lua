--@include wf_group
-- wf_add puts node x's task (id, message msg, due at due, route raw or
-- false: not read, delivery d or false: none recorded) into run r's
-- push into partition (queue, part).
local function wf_add(r, x, id, queue, part, msg, due, raw, d)
  -- a run's releases mostly go to one partition: the last one's push is
  -- kept, and its partition in it, not in r, whose fields stay within
  -- the 32 its hash part holds with no rehash
  local g = r.lastg
  if not g or g.queue ~= queue or g.part ~= part then
    g = wf_group(r, queue, part)
    r.lastg = g
  end
  local k = g.n + 1
  g.n = k
  g.ids[k], g.msgs[k], g.es[k], g.ms[k], g.xs[k], g.due[k] = id, msg, d, raw, x, due
end
