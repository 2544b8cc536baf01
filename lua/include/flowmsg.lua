--@include msgfields
-- msg_flow returns a message's flow ref (its 13th field, wire.Message.Flow)
-- or "" when it has none or does not parse.
local function msg_flow(m)
  if not m or string.byte(m, 1) ~= 0x9d then return '' end
  local pos = 2
  for _ = 1, 11 do
    pos = msg_skip(m, pos)
    if not pos then return '' end
  end
  -- the headers: a map of strings, maybe empty
  local h, n = string.byte(m, pos), nil
  if h and h >= 0x80 and h <= 0x8f then n, pos = h - 0x80, pos + 1
  elseif h == 0xde then
    local hi, lo = string.byte(m, pos + 1, pos + 2)
    if not lo then return '' end
    n, pos = hi * 256 + lo, pos + 3
  elseif h == 0xc0 then n, pos = 0, pos + 1
  else return '' end
  for _ = 1, 2 * n do
    pos = msg_skip(m, pos)
    if not pos then return '' end
  end
  return (msg_str(m, pos)) or ''
end

-- flow_deleted reports the deletion of task id of partition T, whose
-- message is m, to its flow, if it has one: to the flow a deleted task is
-- dead (a batch it belonged to can still finish; a chain stops there).
local function flow_deleted(T, id, m)
  local flow = msg_flow(m)
  if flow ~= '' then
    redis.call('RPUSH', T .. ':notify', cmsgpack.pack({flow, id, 'd', '', 'deleted by an operator'}))
  end
end
