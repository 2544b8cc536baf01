--@include wf_settings
-- wf_joined reports whether node x of run r is an implicit parent of
-- the workflow's join nodes (join, a children list such as "ron-complete
-- fon-success": a batch's callbacks): every node but the join nodes is,
-- with no children list of its own to say so, so a member of a batch
-- costs no field for its edges.
local function wf_joined(r, x)
  if r.cancelled == nil then wf_settings(r) end
  return r.join ~= false and not r.joins[x]
end
