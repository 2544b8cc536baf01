#!lua
--[[ flow_workflow_cancel: cancel workflow wid at its home H. Nodes not
  yet enqueued are cancelled; those whose outbox entry was not delivered
  yet are taken out and cancelled too. The caller stops the rest, which
  are enqueued: their outcomes still arrive, and release nothing.
  KEYS[1] H:w:<wid>
  ARGV[1] H  ARGV[2] now (ms, "" = server time)
  Returns: {FLOW_CREATED, queue, task ID, ...} of the enqueued nodes, or
  {FLOW_NOT_FOUND} or {FLOW_FINISHED} (include/codes.lua) ]]
--@include codes
--@include time
--@include flowhome
local W, H = KEYS[1], ARGV[1]
local now = now_ms(ARGV[2])
local f = redis.call('HMGET', W, 'state', 'finished')
if not f[1] then return {FLOW_NOT_FOUND} end
if f[2] ~= '0' then return {FLOW_FINISHED} end
redis.call('HSET', W, 'state', 'cancelled', 'why', 'cancelled')
local out = {FLOW_CREATED}
local all = redis.call('HGETALL', W)
local work = {}
for i = 1, #all, 2 do
  local x = string.match(all[i], '^s:(.+)$')
  local st = all[i + 1]
  if x and st ~= 's' and st ~= 'd' and st ~= 'x' then
    local cancel = st ~= 'p'
    local m = cmsgpack.unpack(redis.call('HGET', W, 'm:' .. x))
    if st == 'p' and redis.call('ZREM', H .. ':out', m[1]) == 1 then
      -- never delivered: it will not be
      redis.call('HDEL', H .. ':outmsg', m[1])
      cancel = true
    end
    if cancel then
      redis.call('HDEL', W, 'e:' .. x)
      wf_set(W, x, st, 'x', work)
    else
      out[#out + 1], out[#out + 2] = m[2], m[1]
    end
  end
end
wf_check(W, now)
return out
