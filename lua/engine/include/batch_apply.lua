--@include batch_check
--@include batch_callback
-- A batch 0.1.0 created keeps its own records, H:b:<bid> and
-- H:bm:<bid>; batches are workflows since (queue/batch.go). This
-- finishes the batches created before the upgrade, and goes in 0.3.0.
-- batch_apply moves member of batch bid to outcome ("s" or "d"): from
-- pending to either, or from dead to succeeded (an operator retried it).
-- Anything else (a repeat, a late "d" after "s", an unknown member or
-- batch) changes nothing. It reports whether the state changed.
function batch_apply(H, bid, member, outcome, now)
  local mk = H .. ':bm:' .. bid
  local st = redis.call('HGET', mk, member)
  if not st then
    batch_callback(H, bid, member, outcome, now)
    return false
  end
  if st == outcome or st == 's' then return false end
  local bk = H .. ':b:' .. bid
  redis.call('HSET', mk, member, outcome)
  redis.call('HINCRBY', bk, st == 'p' and 'pending' or 'dead', -1)
  redis.call('HINCRBY', bk, outcome == 's' and 'succeeded' or 'dead', 1)
  batch_check(H, bid, now)
  return true
end
