--@include codes
--@include msg_head
--@include record_get
--@include record_forget
--@include keydepth_down
--@include fair
--@include lease_tasks
-- dequeue_reply leases the messages and returns pop's and claim's reply:
-- {status, aux, now, codes, {messages}, {index, attempt, token, id, granted,
-- ...}}, status POP_OK, or POP_PARKED when none was left to lease (look
-- again at once). Messages with a group that did not come from
-- their keys' turns (fair, false: from the pending list, where a build
-- before fair queues put them) join their keys' tasks instead.
local function dequeue_reply(T, msgs, lim, now, lease, worker, aux, codes, size, fair)
  -- tasks deleted while pending (tomb_pending.lua) are dropped as they are
  -- reached; with none, the common case, this costs one EXISTS
  local dropped = 0
  if #msgs > 0 and redis.call('EXISTS', T .. ':tomb') == 1 then
    local live = {}
    for _, m in ipairs(msgs) do
      local id = msg_head(m)
      if redis.call('SREM', T .. ':tomb', id) == 1 then
        dropped = dropped + 1
        local _, key = msg_head(m)
        local r = record_get(T .. ':state', id)
        if r[2] == 0 then keydepth_down(T, key, 1) end
        redis.call('HDEL', T .. ':state', id)
        redis.call('HDEL', T .. ':msg', id)
        record_forget(T, {id})
      else
        live[#live + 1] = m
      end
    end
    msgs = live
  end
  local keep, parked = msgs, 0
  if not fair then
    keep = fair_route(T, msgs, false, size)
    parked = #msgs - #keep
  end
  local status = POP_OK
  if #keep == 0 and (parked > 0 or dropped > 0) then status = POP_PARKED end
  local leased, extra = lease_tasks(T, keep, now, now + lease, worker, lim)
  return {status, aux, now, codes, leased, extra}
end
