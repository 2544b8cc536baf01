--@include home_out_put
-- A batch 0.1.0 created keeps its own records, H:b:<bid> and
-- H:bm:<bid>; batches are workflows since (queue/batch.go). This
-- finishes the batches created before the upgrade, and goes in 0.3.0.
local batch_apply -- batch_apply.lua: a child batch tells its parent

-- batch_check finishes batch bid when it is closed and nothing is pending:
-- the complete callback goes out (once: cbc_fired), the success callback
-- too when every member succeeded (once: cbs_fired, possibly later than
-- the first, after dead members were retried), and the keys get the
-- retention as TTL. Once the callbacks that went out have run (their
-- outcomes come back like members': cbs_done, cbc_done), the parent batch
-- is told (as its member "b:<bid>"): succeeded when every member and
-- callback did, else dead. So a parent's callbacks run after its
-- children's.
local function batch_check(H, bid, now)
  local bk = H .. ':b:' .. bid
  -- most calls (a member of a running batch finished) stop here
  local open = redis.call('HMGET', bk, 'closed', 'pending')
  if open[1] ~= '1' or tonumber(open[2]) > 0 then return end
  local f = redis.call('HMGET', bk, 'closed', 'pending', 'total', 'succeeded', 'finished',
    'cbs', 'cbs_fired', 'cbc', 'cbc_fired', 'parent', 'told', 'ret', 'cbs_id', 'cbc_id',
    'cbs_done', 'cbc_done')
  local all_ok = tonumber(f[4]) == tonumber(f[3])
  if f[5] == '0' then redis.call('HSET', bk, 'finished', now) end
  local cbc_out, cbs_out = f[9] ~= '0', f[7] ~= '0'
  if f[8] ~= '' and not cbc_out then
    home_out_put(H, f[14], f[8], now)
    redis.call('HSET', bk, 'cbc_fired', now)
    cbc_out = true
  end
  if all_ok and f[6] ~= '' and not cbs_out then
    home_out_put(H, f[13], f[6], now)
    redis.call('HSET', bk, 'cbs_fired', now)
    cbs_out = true
  end
  local ret = tonumber(f[12])
  if ret > 0 then
    redis.call('PEXPIRE', bk, ret)
    redis.call('PEXPIRE', H .. ':bm:' .. bid, ret)
  end
  if f[10] == '' then return end
  if (cbc_out and f[16] == '') or (cbs_out and f[15] == '') then return end -- a callback runs
  local told = (all_ok and f[15] ~= 'd' and f[16] ~= 'd') and 's' or 'd'
  if f[11] ~= told and f[11] ~= 's' then
    redis.call('HSET', bk, 'told', told)
    batch_apply(H, f[10], 'b:' .. bid, told, now)
  end
end
