-- wf_push enqueues the released tasks of one partition (g), as enqueue.lua
-- does: pending now, or scheduled when the node has a delay. A closed
-- partition takes none: they go into the outbox.
local function wf_push(r, g)
  local T = g.T
  if rank_closed(redis.call('GET', T .. ':feed:rank')) then
    -- the routes not read yet, in one call
    local want, at = {}, {}
    for k = 1, g.n do
      if not g.es[k] and not g.ms[k] then
        want[#want + 1], at[#at + 1] = WF_FIELD.route .. g.xs[k], k
      end
    end
    if #want > 0 then
      local v = redis.call('HMGET', r.W, unpack(want))
      for i, k in ipairs(at) do g.ms[k] = v[i] end
    end
    local more = wf_more()
    for k, id in ipairs(g.ids) do
      more.outbox(r, id, g.es[k] or more.delivery(cmsgpack.unpack(g.ms[k]), g.msgs[k]), r.ats)
    end
    return
  end
  local keyed, plain, at, members, copies = {}, {}, {}, {}, {}
  local ids, msgs, dues, np = g.ids, g.msgs, g.due, 0
  for k = 1, g.n do
    local id, msg, due = ids[k], msgs[k], dues[k]
    members[k] = id
    if due > r.now then
      redis.call('ZADD', T .. ':scheduled', due, id)
      redis.call('HSET', T .. ':msg', id, msg)
      redis.call('HSET', T .. ':state', id, record_new('scheduled', due))
      copies[#copies + 1], copies[#copies + 2] = id, msg
    elseif not msgpack_short_head(msg) and msg_keyed(msg) then -- a plain head: one call, not two
      keyed[#keyed + 1] = msg
      copies[#copies + 1], copies[#copies + 2] = id, msg
    else
      np = np + 1
      plain[np], at[np] = msg, k
    end
  end
  pending_store(T, r.size, r.cap, keyed, plain, at, members, copies)
end
