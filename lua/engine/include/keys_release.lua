--@include fair
-- keys_release: tasks of the keys of n (key -> tasks) stopped running.
-- Count them down; a key that was at its GroupConcurrency takes its turns
-- again (include/fair.lua). A batch's keys cost a few calls in all, not
-- a few per task.
local function keys_release(T, n, size)
  local ks = {}
  for key in pairs(n) do ks[#ks + 1] = key end
  if #ks == 0 then return end
  local running = redis.call('HMGET', T .. ':keyactive', unpack(ks))
  local set, del = {}, {}
  for i, key in ipairs(ks) do
    local left = (tonumber(running[i]) or 0) - n[key]
    if left > 0 then
      set[#set + 1] = key
      set[#set + 1] = left
    else
      del[#del + 1] = key
    end
  end
  if #set > 0 then redis.call('HSET', T .. ':keyactive', unpack(set)) end
  if #del > 0 then redis.call('HDEL', T .. ':keyactive', unpack(del)) end
  local recs = redis.call('HMGET', T .. ':fk', unpack(ks))
  for i, key in ipairs(ks) do
    if recs[i] and string.sub(recs[i], -1) == 'b' then fair_release(T, key) end
  end
  -- a task parked by a build before fair queues joins its key's tasks
  if redis.call('EXISTS', T .. ':parked') == 0 then return end
  for _, key in ipairs(ks) do
    local m = redis.call('LPOP', T .. ':k:' .. key)
    if m then
      if redis.call('HINCRBY', T .. ':keywait', key, -1) <= 0 then
        redis.call('HDEL', T .. ':keywait', key)
      end
      if redis.call('DECR', T .. ':parked') <= 0 then redis.call('DEL', T .. ':parked') end
      turns_lib().push(T, key, {m}, true, size)
    end
  end
end
