--@include msg_flow
-- home_deleted reports the deletion of task id of partition T, whose
-- message is m, to its flow, if it has one: to the flow a deleted task is
-- dead (a batch it belonged to can still finish; a chain stops there).
local function home_deleted(T, id, m)
  local flow = msg_flow(m)
  if flow ~= '' then
    redis.call('RPUSH', T .. ':notify', cmsgpack.pack({flow, id, 'd', '', 'deleted by an operator'}))
  end
end
