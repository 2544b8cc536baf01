--@include wf_run
--@include wf_flush
--@include wf_check
-- wf_finish releases what run r's outcomes freed, writes its changes and
-- checks whether the workflow finished.
local function wf_finish(r)
  wf_run(r, r.now)
  wf_check(r.W, r.now, wf_flush(r))
end
