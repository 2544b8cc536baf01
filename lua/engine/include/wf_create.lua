--@include wf_nest
-- wf_create records new workflow W in home H from the fields the caller
-- staged in KEYS[2] (see workflow_add.lua for ARGV), nested in its
-- parent's workflow when ARGV[16] names one. It returns the refusal, or
-- nil and the run that releases the roots. The workflow goes into H's
-- feed of recent flows ("b:<id>", "w:<id>"), of RECENT_CAP at most.
local RECENT_CAP = 1000
local function wf_create(W, H, now, max)
  if redis.call('EXISTS', W) == 1 then
    redis.call('DEL', KEYS[2])
    return {FLOW_ID_TAKEN}
  end
  local parent = ARGV[16] or ''
  if parent ~= '' then
    local refused = wf_nest(H, H .. ':w:' .. parent, ARGV[17], ARGV[18] == '1', true, now, max)
    if refused then
      redis.call('DEL', KEYS[2])
      return refused
    end
  end
  -- a new graph: its fields as they came, then its roots are released
  if redis.call('EXISTS', KEYS[2]) == 0 then
    return redis.error_reply('ERR workflow ' .. ARGV[3] .. ': its nodes were not written before the script')
  end
  redis.call('RENAME', KEYS[2], W)
  redis.call('PERSIST', W) -- the fields' expiry, for a transaction that failed
  local n = ARGV[10]
  redis.call('HSET', W, 'state', 'running', 'n', n, 'edges', ARGV[11], 'open', n, 'bad', 0, 'cnt_w', n,
    'why', '', 'why_node', '', 'why_id', '', 'created', now, 'finished', 0, 'ret', ARGV[4])
  if ARGV[9] ~= '' then redis.call('HSET', W, 'dr', ARGV[9]) end
  local kind = 'w:'
  if (ARGV[15] or '') ~= '' then
    -- a batch's shape
    redis.call('HSET', W, 'max', ARGV[14], 'gate', ARGV[15], 'desc', ARGV[19])
    if ARGV[13] ~= '' then redis.call('HSET', W, 'join', ARGV[13]) end
    kind = 'b:'
  end
  if parent ~= '' then
    wf_nest(H, H .. ':w:' .. parent, ARGV[17], true, false, now, max)
    redis.call('HSET', W, 'up', parent .. ' ' .. ARGV[17])
  end
  local recent = H .. ':recent'
  redis.call('ZADD', recent, now, kind .. ARGV[3])
  local over = redis.call('ZCARD', recent) - RECENT_CAP
  if over > 0 then redis.call('ZREMRANGEBYRANK', recent, 0, over - 1) end
  local r = wf_lib().start(H, W, now)
  r.work = cmsgpack.unpack(ARGV[12]) or {}
  return nil, r
end
