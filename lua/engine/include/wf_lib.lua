--@include closed
--@include record
--@include pending
--@include msg_keyed
-- wf_lib returns the workflow helpers (WF), made by the first call that
-- needs them: the names are in include/wf_names.lua.
local WF -- the helpers, once made

local function wf_lib()
  if WF then return WF end
  --@include wf_names
  --@include wf_delivery
  --@include wf_split
  --@include wf_kids
  --@include wf_acked
  --@include wf_effect
  --@include wf_count
  --@include wf_start
  --@include wf_parse
  --@include wf_node
  --@include wf_dirty
  --@include wf_set
  --@include wf_run
  --@include wf_chunks
  --@include wf_flush
  --@include wf_check
  --@include wf_note
  --@include wf_finish
  WF = {delivery = wf_delivery, split = wf_split, kids = wf_kids, acked = wf_acked, effect = wf_effect, count = wf_count,
    start = wf_start, parse = wf_parse, node = wf_node, dirty = wf_dirty, set = wf_set, run = wf_run, chunks = wf_chunks,
    flush = wf_flush, check = wf_check, note = wf_note, finish = wf_finish}
  return WF
end
