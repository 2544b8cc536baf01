-- ack_note adds to the call a's flow notifications (a.notes, ack_tasks)
-- the success of task id of the flow ref flow (wire.FlowNote), with its
-- result when the flow passes it on.
local function ack_note(a, flow, id)
  local kind = string.byte(flow, 1)
  local result = ''
  if kind == 99 or kind == 119 then -- 'c', 'w': a chain link or workflow node passes its result on
    result = redis.call('HGET', a.T .. ':result', id) or ''
  end
  a.notes = a.notes or {}
  a.notes[#a.notes + 1] = cmsgpack.pack({flow, id, 's', result, ''})
end
