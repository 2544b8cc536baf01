-- wf_open_to refuses an extension of workflow X, whose fields f are
-- state, finished, n, max, gate and join, from outside (inside false)
-- once its gate succeeded, and any once a join node no longer waits;
-- else it returns nil and X's join list (false for none).
local function wf_open_to(X, f, inside)
  if not f[1] then return {FLOW_NOT_FOUND} end
  if f[1] == 'cancelled' then return {FLOW_CLOSED} end
  if f[2] ~= '0' then return {FLOW_FINISHED} end
  if f[5] and not inside and redis.call('HGET', X, 's:' .. f[5]) ~= 'p' then return {FLOW_CLOSED, f[5]} end
  local wf = wf_lib()
  for x in string.gmatch(f[6] or '', '%S(%S+)') do
    local st = wf.parse(redis.call('HGET', X, 's:' .. x) or 'x')[1]
    if st ~= 'w' and st ~= 'f' and st ~= 'k' then return {FLOW_NOT_WAITING, '', x} end
  end
  return nil, f[6] or false
end
