--@include wf_settings
-- wf_sole reports whether run r may trust an upper-case edge letter: its
-- child has that parent alone, so the parent's success releases it.
-- A node's parents are fixed when it is recorded, unless an extension
-- makes a new node a parent of it (queue.Before), which sets ext; a
-- cancelled workflow releases nothing. Either way the child's state is
-- read, as for any other.
local function wf_sole(r)
  if r.cancelled == nil then wf_settings(r) end
  return r.sole
end
