#!lua
--[[ flow_batch_new: create a batch at its home H, and register it as a
  member ("b:<id>") of its parent batch, which lives in the same home.
  KEYS[1] H:b:<id>
  ARGV[1] H  ARGV[2] now (ms, "" = server time)  ARGV[3] batch ID
  ARGV[4] description  ARGV[5] parent batch ID ("" = none)
  ARGV[6] retention after it finished (ms, 0 = forever)
  ARGV[7] success callback's task ID  ARGV[8] its delivery ("" = none)
  ARGV[9] complete callback's task ID  ARGV[10] its delivery ("" = none)
  ARGV[11] 1 when the caller is a task of the parent (may add after Close)
  The callbacks' messages carry the batch's flow ref: their outcomes come
  back (include/flowhome.lua), and the parent is told after them.
  Returns: (include/codes.lua) FLOW_CREATED, FLOW_ID_TAKEN, or of the
  parent FLOW_NOT_FOUND, FLOW_FINISHED or FLOW_CLOSED ]]
--@include codes
--@include time
--@include flowhome
local H, id, parent = ARGV[1], ARGV[3], ARGV[5]
local now = now_ms(ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 1 then return FLOW_ID_TAKEN end
if parent ~= '' then
  local pk = H .. ':b:' .. parent
  local f = redis.call('HMGET', pk, 'closed', 'finished')
  if not f[1] then return FLOW_NOT_FOUND end
  if f[2] ~= '0' then return FLOW_FINISHED end
  if f[1] == '1' and ARGV[11] ~= '1' then return FLOW_CLOSED end
  if redis.call('HSETNX', H .. ':bm:' .. parent, 'b:' .. id, 'p') == 1 then
    redis.call('HINCRBY', pk, 'total', 1)
    redis.call('HINCRBY', pk, 'pending', 1)
  end
end
redis.call('HSET', KEYS[1], 'total', 0, 'pending', 0, 'succeeded', 0, 'dead', 0,
  'closed', 0, 'created', now, 'finished', 0, 'desc', ARGV[4], 'parent', parent,
  'told', '', 'ret', ARGV[6], 'cbs_id', ARGV[7], 'cbs', ARGV[8], 'cbs_fired', 0,
  'cbc_id', ARGV[9], 'cbc', ARGV[10], 'cbc_fired', 0, 'cbs_done', '', 'cbc_done', '')
flow_recent(H, 'b:' .. id, now)
return FLOW_CREATED
