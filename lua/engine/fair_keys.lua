#!lua flags=no-writes,allow-oom
--[[ fair_keys: a page of partition T's groups, the keys with the
  most tasks waiting first (include/fair.lua), after a marker; or one key.
  KEYS[1] T:fz  KEYS[2] T:keyactive  KEYS[3] T:fw  KEYS[4] T:fp  KEYS[5] T:fk
  KEYS[6] T:limits  KEYS[7] T:active  KEYS[8] T:msg
  ARGV[1] the key to read alone ("" = a page)  ARGV[2] marker: the last
  key's tasks waiting ("" = from the top)  ARGV[3] marker: the last key
  ARGV[4] limit
  The marker need not be in the set any more: the page starts at the first
  key that orders after it (zset_position), so a page costs the same
  whatever the number of keys. A key whose backlog changed between pages
  may be seen twice, or not at all.
  Returns: {key, tasks waiting, tasks running, weight (0: the default),
  paused (0/1), its score in T:fz (the page's order and marker), ...}.
  A key's tasks waiting are its list's and its tasks placed in turns not
  taken yet (include/fair.lua); T:fz orders keys with no list by their
  tasks placed at their last enqueue, so a key that has few tasks left
  may order too high until its next enqueue or its record goes.
  A lease counts its key's running tasks only under a GroupConcurrency
  (include/lease.lua), so without one the running tasks are counted here,
  from the messages of the partition's leases, the first RUN_SCAN of them
  by deadline: a call reads at most that many messages, whatever the
  keys, their backlogs or the tasks running. ]]
--@include zpos
--@include fair
local T = string.sub(KEYS[1], 1, -4) -- T:fz less ':fz'
local keys = {}
if ARGV[1] ~= '' then
  keys = {ARGV[1]}
else
  local limit = tonumber(ARGV[4])
  local n = redis.call('ZCARD', KEYS[1])
  local to = n - 1
  if ARGV[2] ~= '' then
    local pos = zset_position(KEYS[1], tonumber(ARGV[2]), ARGV[3])
    to = pos - 1
  end
  local from = math.max(0, to - limit + 1)
  if to >= from then
    local page = redis.call('ZRANGE', KEYS[1], from, to)
    for i = #page, 1, -1 do keys[#keys + 1] = page[i] end
  end
end
if #keys == 0 then return {} end
local waiting = redis.call('ZMSCORE', KEYS[1], unpack(keys))
local RUN_SCAN = 10000
local running
if (tonumber(redis.call('HGET', KEYS[6], 'keyconc')) or 0) > 0 then
  running = redis.call('HMGET', KEYS[2], unpack(keys))
else
  local want, count = {}, {}
  for _, key in ipairs(keys) do want[key] = true end
  local ids = redis.call('ZRANGE', KEYS[7], 0, RUN_SCAN - 1)
  for j = 1, #ids, 1000 do
    for _, m in ipairs(redis.call('HMGET', KEYS[8], unpack(ids, j, math.min(#ids, j + 999)))) do
      if m then
        local _, key = msg_head(m)
        if want[key] then count[key] = (count[key] or 0) + 1 end
      end
    end
  end
  running = {}
  for i, key in ipairs(keys) do running[i] = count[key] or 0 end
end
local weights = redis.call('HMGET', KEYS[3], unpack(keys))
local paused = redis.call('SMISMEMBER', KEYS[4], unpack(keys))
local lists = redis.call('HMGET', KEYS[5], unpack(keys))
local placed = redis.call('HMGET', T .. ':fa', unpack(keys))
local t = turns_lib()
local cur, popped = t.get(T)
local out = {}
for i, key in ipairs(keys) do
  local score = tonumber(waiting[i] or 0) or 0
  local n = lists[i] and score or 0
  if placed[i] then n = n + t.waiting(t.rec(placed[i]), cur, popped) end
  out[#out + 1] = key
  out[#out + 1] = n
  out[#out + 1] = tonumber(running[i] or 0) or 0
  out[#out + 1] = tonumber(weights[i] or 0) or 0
  out[#out + 1] = paused[i]
  out[#out + 1] = score
end
return out
