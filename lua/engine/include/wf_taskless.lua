-- wf_taskless returns the route stored for a taskless node (a batch's
-- gate, a nested batch): no task ID, queue, type or partition.
local function wf_taskless()
  return cmsgpack.pack({'', '', '', 0})
end
