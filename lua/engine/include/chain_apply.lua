--@include home_out_put
-- A chain 0.1.0 enqueued keeps its own record, H:c:<cid>: per link k its
-- task ID i:k, delivery e:k, state s:k and result r:k. Chains are
-- workflows since 0.2.0 (queue.Chain); this applies the outcomes of the
-- links of a chain enqueued before the upgrade until it ends, and goes
-- in 0.3.0.
-- chain_apply records link k of chain cid reaching outcome: success
-- stores its result and puts the next link into the outbox (or finishes
-- the chain); dead stops the chain there, with the error. A dead link
-- that succeeds later (retried) resumes the chain. Repeats change nothing.
local function chain_apply(H, cid, k, outcome, result, err, now)
  local ck = H .. ':c:' .. cid
  local st = redis.call('HGET', ck, 's:' .. k)
  if not st or st == 's' or st == 'w' or st == outcome then return false end
  redis.call('HSET', ck, 's:' .. k, outcome)
  if outcome == 'd' then
    redis.call('HSET', ck, 'state', 'stopped', 'stop_link', k, 'stop_err', err, 'stopped_at', now)
    -- a stopped chain is kept for the retention, for its dead link to be
    -- retried; one never retried expires then
    local ret = tonumber(redis.call('HGET', ck, 'ret'))
    if ret > 0 then redis.call('PEXPIRE', ck, ret) end
    return true
  end
  redis.call('PERSIST', ck) -- it runs again (a retried link succeeded)
  if result and result ~= '' then redis.call('HSET', ck, 'r:' .. k, result) end
  local n = tonumber(redis.call('HGET', ck, 'n'))
  if k < n then
    local nxt = k + 1
    local f = redis.call('HMGET', ck, 'i:' .. nxt, 'e:' .. nxt)
    redis.call('HSET', ck, 's:' .. nxt, 'p', 'cur', nxt, 'state', 'running', 'stop_link', 0, 'stop_err', '')
    home_out_put(H, f[1], f[2], now)
  else
    redis.call('HSET', ck, 'state', 'done', 'finished', now, 'stop_link', 0, 'stop_err', '')
    local ret = tonumber(redis.call('HGET', ck, 'ret'))
    if ret > 0 then redis.call('PEXPIRE', ck, ret) end
  end
  return true
end

