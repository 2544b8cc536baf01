--@include wf_load
--@include wf_spread
--@include wf_run_round
--@include wf_run_release
--@include wf_push
-- wf_run evaluates the queued nodes, and those their changes queue, a
-- round at a time (wf_run_round); the nodes released are visible in the
-- outbox at at. The nodes of a round of work are read together
-- (wf_load), and so are the released nodes' tasks, at the end, 500 a
-- call: those wf_spread released unread, and the others.
local function wf_run(r, at)
  -- formatted once: a number argument is formatted at every use
  r.ats = string.format('%d', at)
  wf_spread(r)
  local i, work = 1, r.work
  while work[i] ~= nil do
    local last = #work
    wf_load(r, work, false, i, last)
    wf_run_round(r, i, last)
    i = last + 1
    wf_spread(r)
  end
  local rel = r.rel
  r.rel = {}
  for k = 1, #rel, 500 do
    wf_run_release(r, rel, k, math.min(k + 499, #rel))
    -- pushed a chunk at a time: a run's messages never all live in Lua
    for _, g in ipairs(r.pushed) do wf_push(r, g) end
    r.push, r.pushed, r.lastg = {}, {}, nil
  end
end
