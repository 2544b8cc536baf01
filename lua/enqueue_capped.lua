#!lua
--[[ enqueue_capped: enqueue.lua for a queue that may have a maximum depth
  (Limits.MaxDepth, the field maxdepth of T:limits): the same call, with the
  depth checked in the same script as the push, so concurrent producers
  never take the queue past it. Producers use it while they know, or have
  not checked lately, that the queue has a maximum; enqueue.lua otherwise.
  KEYS: enqueue.lua's.
  ARGV[1] this partition's number  ARGV[2] the queue's partition count
  ARGV[3..] enqueue.lua's ARGV, unchanged: its first five are the header
    (T is the first, the shard size the third, the fields per task the
    fifth), then the tasks.
  Returns: enqueue.lua's code for each task (-4 for all when the partition
  is closed), -3 for a task refused because
  the partition is at its share of the maximum (the tasks are admitted in
  order while there is room; a refused task changes nothing), then one more
  element: the queue's maximum depth (0 = none), which the producer caches.
  An admitted task that enqueue.lua then rejects (a duplicate) still took
  its place in this call's count: the check errs towards refusing. ]]
--@include depth
local HEADER = 5
local part, parts = tonumber(ARGV[1]), tonumber(ARGV[2])
local T, size, F = ARGV[3], tonumber(ARGV[5]), tonumber(ARGV[7])
local ntasks = (#ARGV - 2 - HEADER) / F
local max = depth_max(T)
if redis.call('EXISTS', T .. ':closed') == 1 then
  -- draining (see enqueue.lua): refused as closed, not as full
  local codes = {}
  for _ = 1, ntasks do codes[#codes + 1] = -4 end
  codes[#codes + 1] = max
  return codes
end
local admit = ntasks
if max > 0 then
  admit = math.min(ntasks, math.max(0, depth_share(max, part, parts) - depth_of(T, size)))
end
local codes = {}
if admit > 0 then
  -- enqueue.lua's body runs as it is, seeing only the admitted tasks
  local args = {}
  for i = 3, 2 + HEADER + admit * F do args[#args + 1] = ARGV[i] end
  local ARGV = args
  local function enqueue()
--@script enqueue
  end
  codes = enqueue()
end
for k = admit + 1, ntasks do codes[k] = -3 end
codes[ntasks + 1] = max
return codes
