--@include batch_check
-- A batch 0.1.0 created keeps its own records, H:b:<bid> and
-- H:bm:<bid>; batches are workflows since (queue/batch.go). This
-- finishes the batches created before the upgrade, and goes in 0.3.0.
-- batch_callback records a callback's outcome (member is its task ID):
-- it reports whether member is one of bid's callbacks.
local function batch_callback(H, bid, member, outcome, now)
  local bk = H .. ':b:' .. bid
  local f = redis.call('HMGET', bk, 'cbs_id', 'cbc_id', 'cbs_done', 'cbc_done')
  local field, cur
  if member == f[1] then field, cur = 'cbs_done', f[3]
  elseif member == f[2] then field, cur = 'cbc_done', f[4]
  else return false end
  if cur and cur ~= 's' and cur ~= outcome then
    redis.call('HSET', bk, field, outcome)
    batch_check(H, bid, now)
  end
  return true
end
