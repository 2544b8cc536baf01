--@include wf_run_lib
-- wf_lib returns every workflow helper (WF: see include/wf_more.lua), for
-- the scripts that record, extend, cancel or notify workflows.
local function wf_lib()
  return wf_run_lib().more()
end
