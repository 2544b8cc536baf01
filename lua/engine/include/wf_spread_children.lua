-- wf_spread_children reads, in one call per 500, the children lists not
-- read yet of the changed nodes in fan (per node its name, state before
-- and after, and children list, 0: not read yet), into fan and the
-- nodes' entries.
local function wf_spread_children(r, fan)
  local nodes, need = r.nodes, {}
  for i = 1, #fan, 4 do
    if fan[i + 3] == 0 then need[#need + 1] = i end
  end
  for i = 1, #need, 500 do
    local fields, last = {}, math.min(i + 499, #need)
    for j = i, last do fields[#fields + 1] = WF_FIELD.children .. fan[need[j]] end
    local v = redis.call('HMGET', r.W, unpack(fields))
    for j = i, last do
      local f = need[j]
      local cs = v[j - i + 1] or false
      fan[f + 3] = cs
      nodes[fan[f]][5] = cs
    end
  end
end
