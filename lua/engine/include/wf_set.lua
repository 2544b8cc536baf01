--@include wf_dirty
--@include wf_joined
-- the states that count as bad: the workflow fails
local BAD = {[WF_STATE.dead] = true, [WF_STATE.failed] = true}
-- wf_set moves node x (entry n) to state new: the workflow's counters,
-- and its waiting children's, which are queued for evaluation.
local function wf_set(r, x, n, new)
  local st = n[1]
  n[1] = new
  wf_dirty(r, x)
  r.open = r.open + (OPEN[new] and 1 or 0) - (OPEN[st] and 1 or 0)
  r.bad = r.bad + (BAD[new] and 1 or 0) - (BAD[st] and 1 or 0)
  r.counts[st] = (r.counts[st] or 0) - 1
  r.counts[new] = (r.counts[new] or 0) + 1
  -- from waiting to enqueued, or back, means the same to every child
  if OPEN[st] and OPEN[new] then return end
  -- the children hear of it in spread, with the other changes' children
  local cs = n[5]
  if cs == false and not wf_joined(r, x) then return end
  local fan = r.fan
  local f = #fan
  fan[f + 1], fan[f + 2], fan[f + 3], fan[f + 4] = x, st, new, cs or 0
end
