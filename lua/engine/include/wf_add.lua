-- wf_add puts node x's task (id, message msg, due at due, route raw or
-- false: not read, delivery d or false: none recorded) into run r's
-- push into partition (queue, part), made on first use.
local function wf_add(r, x, id, queue, part, msg, due, raw, d)
  -- a run's releases mostly go to one partition: the last one's push is
  -- kept, and its partition in it, not in r, whose fields stay within
  -- the 32 its hash part holds with no rehash
  local g = r.lastg
  if not g or g.queue ~= queue or g.part ~= part then
    local q = r.push[queue]
    if not q then
      q = {}
      r.push[queue] = q
    end
    g = q[part]
    if not g then
      -- per task: ID, message, delivery (false: made from its route
      -- when needed), route (false: not read), node, due time
      local T = '{' .. r.prefix .. ':' .. queue .. ':' .. string.format('%d', part) .. '}'
      g = {T = T, ids = {}, msgs = {}, es = {}, ms = {}, xs = {}, due = {}, n = 0, queue = queue, part = part}
      q[part] = g
      r.pushed[#r.pushed + 1] = g
    end
    r.lastg = g
  end
  local k = g.n + 1
  g.n = k
  g.ids[k], g.msgs[k], g.es[k], g.ms[k], g.xs[k], g.due[k] = id, msg, d, raw, x, due
end
