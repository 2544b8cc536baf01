-- wf_start begins a run, one script's work on workflow W at time now: the nodes it
-- read (entries, as wf_parse makes them), the ones it changed (order, and
-- kv: the states of nodes with shared entries), and what it enqueues
-- or puts into the outbox, all written once by wf_flush.
local function wf_start(H, W, now)
  return {H = H, W = W, now = now, nodes = {}, order = {}, ok = 0, work = {}, rel = {}, open = 0, bad = 0,
    counts = {}, out = {}, outmsg = {}, gone = {}, released = {}, push = {}, pushed = {}, fan = {}, kv = {}}
end
