#!lua
--[[ workflow_cancel: cancel workflow wid at its home H. Waiting
  nodes are cancelled; enqueued ones whose outbox entry was not delivered
  yet are taken out and cancelled too. The caller stops the rest, which
  are enqueued: their outcomes still arrive, and release nothing. Failed
  and skipped nodes keep their states; a node freed later, by a retried
  node, is cancelled.
  KEYS[1] H:w:<wid>
  ARGV[1] H  ARGV[2] now (ms, "" = server time)
  Returns: {FLOW_CREATED, node record, ...}: the m: field, {task ID, queue,
  type, partition}, of each enqueued node that has one (a batch's
  members keep none); or
  {FLOW_NOT_FOUND} or {FLOW_FINISHED} (include/codes.lua) ]]
--@include codes
--@include time
--@include workflow
local W, H = KEYS[1], ARGV[1]
local now = now_ms(ARGV[2])
local wf = wf_lib()
local f = redis.call('HMGET', W, 'state', 'finished')
if not f[1] then return {FLOW_NOT_FOUND} end
if f[2] ~= '0' then return {FLOW_FINISHED} end
redis.call('HSET', W, 'state', 'cancelled', 'why', 'cancelled', 'why_node', '', 'why_id', '')
local out = {FLOW_CREATED}
local r = wf.start(H, W, now)
local all = redis.call('HGETALL', W)
local states = {}
for i = 1, #all, 2 do
  local x = string.match(all[i], '^s:(.+)$')
  if x then
    r.nodes[x] = wf.parse(all[i + 1])
    states[#states + 1] = x
  end
end
for _, x in ipairs(states) do
  local n = r.nodes[x]
  local st = n[1]
  if st == 'w' or st == 'p' then
    local cancel = st ~= 'p'
    local raw = redis.call('HGET', W, 'm:' .. x)
    local m = raw and cmsgpack.unpack(raw) or {}
    if st == 'p' and not raw then
      -- a batch's member keeps no route once enqueued: its outcome
      -- still arrives, and releases nothing
    elseif st == 'p' and m[1] == '' then
      cancel = true -- a taskless node (a batch's gate, a nested batch): nothing to stop
    elseif st == 'p' and redis.call('ZREM', H .. ':out', m[1]) == 1 then
      -- never delivered: it will not be
      redis.call('HDEL', H .. ':outmsg', m[1])
      cancel = true
    end
    if cancel then
      r.gone[#r.gone + 1] = 'e:' .. x
      wf.set(r, x, n, 'x')
    else
      out[#out + 1] = raw
    end
  end
end
wf.check(W, now, wf.flush(r))
return out
