--@include wf_kids
--@include wf_count_freed
--@include wf_spread_success
--@include wf_spread_apply
--@include wf_settings
-- wf_spread applies the state changes wf_set queued (r.fan) to their
-- waiting children's counters, and queues those children for
-- evaluation. The children lists not read yet come in one call, and so
-- do the children. The successes, the common case, go in one call
-- (wf_spread_success); each other change in a call of its own.
local function wf_spread(r)
  local fan = r.fan
  if #fan == 0 then return end
  r.fan = {}
  -- the children lists not read yet (fan: per node its name, state
  -- before and after, and children list, 0: not read yet), 500 a call
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
  -- what the changes do to the children: moves (child, effect before,
  -- effect after), and for successes, decrements per child (dec) named
  -- in order (named), with no move per parent
  local a = {moves = {}, m = 0, dec = {}, named = {}, nd = 0, freed = 0}
  -- the join nodes and sole, read once
  if r.cancelled == nil then wf_settings(r) end
  if wf_spread_success(r, fan, a) then
    local joinlist, joins = r.join, r.joins
    for i = 1, #fan, 4 do
      local x, st, new, cs = fan[i], fan[i + 1], fan[i + 2], fan[i + 3]
      if not (OPEN[st] and new == WF_STATE.succeeded) then
        if cs then wf_more().spread_change(r, x, st, new, wf_kids(cs), a) end
        -- the join nodes, which no list names
        if joinlist and not joins[x] then wf_more().spread_change(r, x, st, new, joinlist, a) end
      end
    end
  end
  wf_count_freed(r, a.freed)
  wf_spread_apply(r, a)
end
