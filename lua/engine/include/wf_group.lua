-- wf_group returns run r's push into partition (queue, part), made on
-- first use.
local function wf_group(r, queue, part)
  local q = r.push[queue]
  if not q then
    q = {}
    r.push[queue] = q
  end
  local g = q[part]
  if not g then
    -- per task: ID, message, delivery (false: made from its route
    -- when needed), route (false: not read), node, due time; and its
    -- partition, which wf_add compares
    local T = '{' .. r.prefix .. ':' .. queue .. ':' .. string.format('%d', part) .. '}'
    g = {T = T, ids = {}, msgs = {}, es = {}, ms = {}, xs = {}, due = {}, n = 0, queue = queue, part = part}
    q[part] = g
    r.pushed[#r.pushed + 1] = g
  end
  return g
end
