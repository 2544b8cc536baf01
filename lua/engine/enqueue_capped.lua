#!lua
--[[ enqueue_capped: enqueue.lua for a queue that may have a maximum depth
  (Limits.MaxDepth, maxdepth in T:limits) or a maximum per group
  (Limits.GroupMaxDepth, keymaxdepth): the same call, with the depths checked
  in the same script as the push, so concurrent producers never pass them.
  Producers use it while they know, or have not checked lately, that the
  queue has a maximum; enqueue.lua otherwise.
  KEYS: enqueue.lua's.
  ARGV[1] this partition's number  ARGV[2] the queue's partition count
  ARGV[3..] enqueue.lua's ARGV, unchanged: its first five are the header
    (T is the first, the shard size the third, the fields per task the
    fifth), then the tasks.
  Returns: enqueue.lua's code for each task (ENQ_CLOSED for all when the
  partition is closed: see enqueue.lua); ENQ_QUEUE_FULL for a task refused
  because the partition is at its share of MaxDepth, ENQ_KEY_FULL because its key is at
  GroupMaxDepth (a refused task changes nothing; the tasks are admitted in
  order while there is room); then two more elements: the queue's MaxDepth
  and GroupMaxDepth (0 = none), which the producer caches. An admitted task
  that enqueue.lua then rejects (a duplicate) still took its place in this
  call's count: the check errs towards refusing. ]]
--@include codes
--@include depth
--@include msg_head
--@include closed
local HEADER = 5
local part, parts = tonumber(ARGV[1]), tonumber(ARGV[2])
local T, size, F = ARGV[3], tonumber(ARGV[5]), tonumber(ARGV[7])
local FIRST = 3 + HEADER
local ntasks = (#ARGV - FIRST + 1) / F
local lim = redis.call('HMGET', T .. ':limits', 'maxdepth', 'keymaxdepth')
local max, keymax = tonumber(lim[1]) or 0, tonumber(lim[2]) or 0
if rank_closed(redis.call('GET', KEYS[4])) then
  -- draining (see enqueue.lua): refused as closed, not as full
  local codes = {}
  for k = 1, ntasks do codes[k] = ENQ_CLOSED end
  codes[ntasks + 1], codes[ntasks + 2] = max, keymax
  return codes
end
local room = ntasks
if max > 0 then room = math.max(0, depth_share(max, part, parts) - depth_of(T, size)) end

-- admission, in order: no writes yet
local codes, admitted, keyof, keyn = {}, {}, {}, {}
for k = 1, ntasks do
  local key, n = '', 0
  if keymax > 0 then
    local _
    _, key = msg_head(ARGV[FIRST + (k - 1) * F])
    if key ~= '' then
      n = keyn[key] or tonumber(redis.call('HGET', T .. ':kdepth', key) or 0)
      keyn[key] = n
    end
  end
  if room <= 0 then
    codes[k] = ENQ_QUEUE_FULL
  elseif key ~= '' and n >= keymax then
    codes[k] = ENQ_KEY_FULL
  else
    room = room - 1
    if key ~= '' then keyn[key] = n + 1 end
    admitted[#admitted + 1], keyof[#admitted + 1] = k, key
  end
end

if #admitted > 0 then
  -- enqueue.lua's body runs as it is, seeing only the admitted tasks
  local args = {}
  for i = 3, FIRST - 1 do args[#args + 1] = ARGV[i] end
  for _, k in ipairs(admitted) do
    local at = FIRST + (k - 1) * F
    for i = at, at + F - 1 do args[#args + 1] = ARGV[i] end
  end
  local ARGV = args
  local function enqueue()
--@script enqueue
  end
  local got = enqueue()
  for j, k in ipairs(admitted) do
    codes[k] = got[j]
    if got[j] >= 0 and keyof[j] ~= '' then
      redis.call('HINCRBY', T .. ':kdepth', keyof[j], 1)
    end
  end
end
codes[ntasks + 1] = max
codes[ntasks + 2] = keymax
return codes
