-- wf_more returns every workflow helper (WF): the run's, and those a run
-- needs only when a node moves any other way than from enqueued to
-- succeeded, or is released other than as a wire.NodeTask, made by the
-- first call that needs them: an ack of nodes, the common case, makes
-- none. Declared in include/wf_run_lib.lua, whose helpers call it.
local WF -- the helpers, once made

function wf_more()
  if WF then return WF end
  --@include wf_note
  --@include wf_spread_change
  --@include wf_count
  --@include wf_release
  --@include wf_delivery
  WF = {delivery = wf_delivery, split = wf_split, kids = wf_kids, acked = wf_acked, effect = wf_effect, count = wf_count,
    start = wf_start, parse = wf_parse, node = wf_node, dirty = wf_dirty, set = wf_set, run = wf_run, chunks = wf_chunks,
    flush = wf_flush, check = wf_check, note = wf_note, finish = wf_finish,
    spread_change = wf_spread_change, release = wf_release, outbox = wf_outbox}
  return WF
end
