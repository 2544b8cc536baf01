-- A task's mutable record, stored in T:state once the task leaves pending:
-- a msgpack array (decoded in Go by queue.record) of
--   [1] state  [2] attempts  [3] lease token  [4] worker  [5] last error
--   [6] last failed at (ms)  [7] started at (ms)  [8] finished at (ms)
--   [9] next process at (ms)
local function record_new(state, next_at)
  return cmsgpack.pack({state, 0, 0, '', '', 0, 0, 0, next_at})
end
