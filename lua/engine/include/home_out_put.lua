-- home_out_put puts delivery entry (wire.Delivery) for task id into H's
-- outbox, visible to sweepers at time at (ms).
local function home_out_put(H, id, entry, at)
  redis.call('ZADD', H .. ':out', at, id)
  redis.call('HSET', H .. ':outmsg', id, entry)
end
