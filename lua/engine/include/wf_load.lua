--@include wf_parse
-- wf_load reads the states of the nodes xs that run r has not read, and
-- with children their children lists, 500 nodes a call: a call per node
-- would cost a fan-out of thousands a call per child. From, to and step
-- pick names out of xs (default: all).
-- Each entry keeps its field's name (key) for flush.
local function wf_load(r, xs, children, from, to, step)
  local nodes, want, keys, nw = r.nodes, {}, {}, 0
  for i = from or 1, to or #xs, step or 1 do
    local x = xs[i]
    if nodes[x] == nil then
      nodes[x] = 0 -- asked for: read once
      nw = nw + 1
      want[nw] = x
    end
  end
  local step, fstate, fkids, waiting = children and 2 or 1, WF_FIELD.state, WF_FIELD.children, WF_STATE.waiting
  for i = 1, nw, 500 do
    local fields, f = {}, 0
    local last = math.min(i + 499, nw)
    for j = i, last do
      local key = fstate .. want[j]
      keys[j] = key
      f = f + 1
      fields[f] = key
      if children then
        f = f + 1
        fields[f] = fkids .. want[j]
      end
    end
    local v = redis.call('HMGET', r.W, unpack(fields))
    for j = i, last do
      local k = step * (j - i) + 1
      local s, n = v[k], false
      -- a waiting node's count met before, the common case: no call
      if s and NUM[s] then n = {waiting, NUM[s], 0, 0, nil, keys[j], nil} elseif s then n = wf_parse(s, keys[j]) end
      if n and children then n[5] = v[k + 1] or false end
      nodes[want[j]] = n
    end
  end
end
