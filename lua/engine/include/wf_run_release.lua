--@include wf_split
--@include wf_add
--@include wf_run_fields
-- wf_run_release sends released nodes rel[k..last] on their way: a task
-- that is a wire.NodeTask into its partition's push (wf_add); any other
-- by its route (wf_release), read with the tasks without dr, and in one
-- more call for those that need it with dr; a taskless node nowhere.
local function wf_run_release(r, rel, k, last)
  local width = r.size and 1 or 2
  local v = redis.call('HMGET', r.W, unpack(wf_run_fields(r, rel, k, last, width)))
  local routed, nr = {}, 0
  -- read once: a workflow with no join nodes (join false) nor batch
  -- costs its nodes no lookup of either
  local join, joins, batch = r.join, r.joins, r.batch
  for j = k, last do
    local x, f = rel[j], width * (j - k) + 1
    local e = v[f]
    if not e then
      -- released before: its task went out then. Pushing nothing
      -- here would leave the counts wrong; no write of this run is
      -- made yet but the pushes of earlier chunks
      error('workflow ' .. r.W .. ': node ' .. x .. ' released twice: its task (' .. WF_FIELD.task .. x .. ') is gone', 0)
    end
    local id, queue, part, msg
    if width == 1 then id, queue, part, msg = wf_split(e) end
    local joined = join and joins[x]
    if joined then
      -- a join node (a batch's callback) keeps when it went out
      local kv = r.kv
      kv[#kv + 1], kv[#kv + 2] = 't:' .. x, r.now
    elseif batch and e ~= '' then
      -- a batch's member keeps no route once released: its name is its
      -- task ID (queue/batch.go), and its state its one field
      r.gone[#r.gone + 1] = WF_FIELD.route .. x
    end
    -- a wire.NodeTask first, the common case; '' is none (wf_split)
    if id then
      wf_add(r, x, id, queue, part, msg, 0, false, false)
    elseif e == '' then
      -- a taskless node (include/wf_names.lua): released, nothing to send
    elseif width == 2 then
      wf_more().release(r, x, v[f + 1], e, r.ats)
    else
      routed[nr + 1], routed[nr + 2] = x, e
      nr = nr + 2
    end
  end
  if nr > 0 then
    local ms = {}
    for i = 1, nr, 2 do ms[#ms + 1] = WF_FIELD.route .. routed[i] end
    local mv = redis.call('HMGET', r.W, unpack(ms))
    local release = wf_more().release
    for i = 1, nr, 2 do release(r, routed[i], mv[(i + 1) / 2], routed[i + 1], r.ats) end
  end
end
