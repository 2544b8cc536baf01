-- wf_count_freed counts k nodes of run r moved from waiting to enqueued:
-- no child hears of it, and the open and bad counts stay.
local function wf_count_freed(r, k)
  if k > 0 then
    r.counts[WF_STATE.waiting] = (r.counts[WF_STATE.waiting] or 0) - k
    r.counts[WF_STATE.enqueued] = (r.counts[WF_STATE.enqueued] or 0) + k
  end
end
