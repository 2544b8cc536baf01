-- record_forget deletes what the handlers of the tasks ids wrote beside
-- their records, their progress, result and finished steps: the tasks
-- are gone.
local function record_forget(T, ids)
  if #ids == 0 then return end
  redis.call('HDEL', T .. ':progress', unpack(ids))
  redis.call('HDEL', T .. ':result', unpack(ids))
  redis.call('HDEL', T .. ':steps', unpack(ids))
end
