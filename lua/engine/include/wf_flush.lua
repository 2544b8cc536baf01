--@include wf_spread
--@include wf_chunks
--@include wf_push
-- wf_flush writes what run r changed. It returns W's state, open, bad,
-- finished, ret and up, as wf_check reads them.
local function wf_flush(r)
  -- a cancel sets states without a run
  wf_spread(r)
  -- the shared entries' states first: a node moved again is in order
  local kv, order = r.kv, r.order
  local nodes, k, waiting = r.nodes, #r.kv, WF_STATE.waiting
  r.kv = {}
  for i = 1, #order do
    local x = order[i]
    local n = nodes[x]
    local v = n[1]
    if WAITS[v] then
      -- waiting, with no parent failing or skipping it: its count alone
      local u = n[2]
      if v == waiting and n[3] == 0 and n[4] == 0 then
        v = STR[u]
        if not v then
          v = string.format('%d', u)
          STR[u] = v
        end
      else
        v = string.format('%s %d %d %d', v, u, n[3], n[4])
      end
    end
    kv[k + 1], kv[k + 2] = n[6] or WF_FIELD.state .. x, v
    k = k + 2
    n[7] = nil
  end
  if r.ok > 0 then
    -- the successes wf_acked tallied: from p, open, to s
    r.open = r.open - r.ok
    r.counts[WF_STATE.enqueued] = (r.counts[WF_STATE.enqueued] or 0) - r.ok
    r.counts[WF_STATE.succeeded] = (r.counts[WF_STATE.succeeded] or 0) + r.ok
    r.ok = 0
  end
  -- the counters that moved and the fields wf_check reads next (f, with
  -- the new counts), in one call; written with the states, not HINCRBYs
  local names, ds = {'state', 'open', 'bad', 'finished', 'ret', 'up'}, {false, r.open, r.bad, false, false, false}
  for st, d in pairs(r.counts) do
    if d ~= 0 then names[#names + 1], ds[#ds + 1] = 'cnt_' .. st, d end
  end
  local f = redis.call('HMGET', r.W, unpack(names))
  for i = 2, #names do
    if ds[i] and ds[i] ~= 0 then
      local c = tonumber(f[i] or 0)
      if not c then error('workflow ' .. r.W .. ': ' .. names[i] .. ' holds ' .. f[i] .. ', not a count', 0) end
      f[i] = string.format('%d', c + ds[i])
      kv[k + 1], kv[k + 2] = names[i], f[i]
      k = k + 2
    end
  end
  wf_chunks('HSET', r.W, kv, 1000)
  wf_chunks('HDEL', r.W, r.gone, 1000)
  for _, g in ipairs(r.pushed) do wf_push(r, g) end
  wf_chunks('ZADD', r.H .. ':out', r.out, 1000)
  wf_chunks('HSET', r.H .. ':outmsg', r.outmsg, 1000)
  r.order, r.gone, r.out, r.outmsg, r.open, r.bad, r.counts = {}, {}, {}, {}, 0, 0, {}
  r.push, r.pushed, r.lastg = {}, {}, nil
  return f
end
