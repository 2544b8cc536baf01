--@include pending_lookup
-- task_views returns {id, score, message or nil, record or "", ...} for the
-- ids and scores given, in their order: each task's message from T:msg
-- when it has a record, else from the recent feed's copy (a pending task),
-- else, for a task still pending without a copy, from its shard (pendingref).
-- One HMGET per hash for the whole page. nil (false here), not "", says
-- there is no message: an empty element is a (malformed) message too.
local function task_views(ids, scores, msg_key, state_key, feedmsg_key)
  local out = {}
  if #ids == 0 then return out end
  local msgs = redis.call('HMGET', msg_key, unpack(ids))
  local copies = redis.call('HMGET', feedmsg_key, unpack(ids))
  local recs = redis.call('HMGET', state_key, unpack(ids))
  -- pending tasks without a copy: found in their shards by rank
  local missing = {}
  for i, id in ipairs(ids) do
    if not msgs[i] and not copies[i] then missing[#missing + 1] = id end
  end
  local found = {}
  if #missing > 0 then
    local T = string.sub(msg_key, 1, -5) -- T:msg less ':msg'
    found = pending_lookup(T, missing, redis.call('ZMSCORE', T .. ':feed', unpack(missing)))
  end
  for i, id in ipairs(ids) do
    out[#out + 1] = id
    out[#out + 1] = scores[i]
    out[#out + 1] = msgs[i] or copies[i] or found[id] or false
    out[#out + 1] = recs[i] or ''
  end
  return out
end
