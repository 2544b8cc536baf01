--@include record_decode
--@include feed_append
--@include record_forget
--@include ack_wf
-- ack_lib returns the helpers of an ack that does more than forget its
-- tasks (ACK: task, keep_write; each in its file ack_<name>),
-- made by the first call that needs them: a definition is a closure made
-- at every script call, and the common ack, of plain tasks (width 2),
-- needs none; one of nodes of one workflow (width 3) takes ack_wf's. What they include themselves is included above, outside,
-- so the script's other code finds it too.
local ACK -- the helpers, once made

local function ack_lib()
  if ACK then return ACK end
  --@include ack_keep
  --@include ack_note
  --@include ack_task
  --@include ack_keep_write
  ACK = {task = ack_task, keep_write = ack_keep_write}
  return ACK
end
