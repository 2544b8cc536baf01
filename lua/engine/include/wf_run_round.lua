--@include wf_count_freed
--@include wf_settings
-- wf_run_round evaluates the queued nodes work[i..last], read: a node
-- waiting, failed or skipped takes the state its counters give, and one
-- whose parents all allow it is released (queued in r.rel), unless the
-- workflow was cancelled, which cancels it instead.
local function wf_run_round(r, i, last)
  local work, rel, nodes, order, cancelled = r.work, r.rel, r.nodes, r.order, r.cancelled
  local waiting, enqueued = WF_STATE.waiting, WF_STATE.enqueued
  -- waiting nodes released: their moves from waiting to enqueued, counted
  -- at the end
  local freed, nrel = 0, #rel
  for j = i, last do
    local x = work[j]
    local n = nodes[x]
    if n and WAITS[n[1]] then
      local st, new = n[1], enqueued
      if n[3] > 0 then
        new = WF_STATE.failed
      elseif n[2] > 0 then
        new = waiting
      elseif n[4] > 0 then
        new = WF_STATE.skipped
      end
      if new == enqueued then
        -- a cancelled workflow releases nothing: a node it frees is cancelled
        if cancelled == nil then
          wf_settings(r)
          cancelled = r.cancelled
        end
        if cancelled then new = WF_STATE.cancelled end
      end
      if new ~= st then
        if new == enqueued then
          nrel = nrel + 1
          rel[nrel] = x
        end
        if new == enqueued and st == waiting then
          -- what wf_set does for waiting to enqueued, the common case:
          -- nothing changes for its children, nor the open and bad
          -- counts; and what wf_dirty does, inline
          n[1] = enqueued
          if not n[7] then
            n[7] = true
            order[#order + 1] = x
          end
          freed = freed + 1
        else
          wf_more().set(r, x, n, new)
        end
      end
    end
  end
  wf_count_freed(r, freed)
end
