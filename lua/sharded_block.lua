#!lua flags=allow-oom
--[[ sharded_block: the helper pipelined just before a blocking move from
  shard KEYS[3]. When that shard is no longer where items arrive (the end
  pointer moved past it, or it is empty while later shards exist), it pushes
  one dummy onto the empty shard so the blocking move returns at once and the
  reader looks again; a shard with items wakes the reader by itself.
  KEYS[1] <base>:first  KEYS[2] <base>:last  KEYS[3] the shard to block on
  ARGV[1] that shard's number  ARGV[2] side: "L" or "R"
  Returns: 1 when it pushed a dummy, 0 when blocking there is right ]]
--@include sharded
local first, last = shard_bounds(KEYS[1], KEYS[2])
local left = ARGV[2] == 'L'
local n = tonumber(ARGV[1])
if n == (left and first or last) and first == last then
  return 0
end
if redis.call('LLEN', KEYS[3]) > 0 then
  return 0
end
-- push at the end the blocked reader takes from, so its move gets the dummy
redis.call(left and 'LPUSH' or 'RPUSH', KEYS[3], DUMMY)
return 1
