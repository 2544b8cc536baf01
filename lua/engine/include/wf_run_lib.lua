--@include closed
--@include record
--@include pending
--@include msg_keyed
-- wf_run_lib returns the helpers of a workflow run that an ack of nodes
-- takes, the hot path (WF_RUN: start, acked, finish), made by the first
-- call that needs them: each is a closure made at every script call, so
-- the helpers a run needs only when a node moves another way are made
-- by wf_more, when it does. The names are in include/wf_names.lua.
local WF_RUN -- the helpers, once made

local function wf_run_lib()
  if WF_RUN then return WF_RUN end
  --@include wf_names
  -- the helpers are made in a function of their own, whose upvalues the
  -- names are: a closure copies an upvalue, where it would search for a
  -- local of wf_run_lib among every local captured before it
  local function make()
    local wf_more -- include/wf_more.lua, made last: it hands on these too
    --@include wf_start
    --@include wf_acked
    --@include wf_run
    --@include wf_flush
    --@include wf_check
    --@include wf_finish
    --@include wf_more
    return {start = wf_start, acked = wf_acked, finish = wf_finish, more = wf_more}
  end
  WF_RUN = make()
  return WF_RUN
end
