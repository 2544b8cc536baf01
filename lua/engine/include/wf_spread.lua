--@include wf_kids
--@include wf_count_freed
--@include wf_spread_children
--@include wf_spread_success
--@include wf_spread_change
--@include wf_spread_apply
--@include wf_settings
-- wf_spread applies the state changes wf_set queued (r.fan) to their
-- waiting children's counters, and queues those children for
-- evaluation. The children lists not read yet come in one call, and so
-- do the children.
local function wf_spread(r)
  local fan = r.fan
  if #fan == 0 then return end
  r.fan = {}
  wf_spread_children(r, fan)
  -- what the changes do to the children: moves (child, effect before,
  -- effect after), and for successes, decrements per child (dec) named
  -- in order (named), with no move per parent
  local a = {moves = {}, m = 0, dec = {}, named = {}, nd = 0, freed = 0, solo = nil, nrel = #r.rel}
  -- the join nodes, read once: wf_joined's test inline, with no call per
  -- change
  if r.cancelled == nil then wf_settings(r) end
  local joinlist, joins = r.join, r.joins
  for i = 1, #fan, 4 do
    local x, st, new, cs = fan[i], fan[i + 1], fan[i + 2], fan[i + 3]
    -- the stored children, then the join nodes, which no list names
    local join = joinlist and not joins[x] and joinlist
    local ok = OPEN[st] and new == WF_STATE.succeeded
    if cs then
      cs = wf_kids(cs)
      if ok then wf_spread_success(r, cs, a) else wf_spread_change(r, x, st, new, cs, a) end
    end
    if join then
      if ok then wf_spread_success(r, join, a) else wf_spread_change(r, x, st, new, join, a) end
    end
  end
  wf_count_freed(r, a.freed)
  wf_spread_apply(r, a)
end
