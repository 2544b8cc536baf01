-- wf_up tells the parent of workflow W (its field up, "<parent> <node>":
-- a nested batch, in the same home) that W finished in state: the
-- parent's node, a taskless one, succeeds when W succeeded and is dead
-- otherwise. A failed W that a retry makes succeed tells it again, and
-- the node moves from dead to succeeded, as a retried task's would.
local function wf_up(W, up, state, now)
  local pid, x = string.match(up, '^(%S+) (%S+)$')
  if not pid then return end
  local wf = wf_lib()
  local H = string.match(W, '^(.*}):w:')
  local r = wf.start(H, H .. ':w:' .. pid, now)
  local ok = state == 'succeeded'
  local why = ok and '' or ('workflow ' .. string.match(W, ':w:(.*)$') .. ' ' .. state)
  if wf.note(r, x, '', ok and WF_STATE.succeeded or WF_STATE.dead, '', why) then wf.finish(r) end
end
