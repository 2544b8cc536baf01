#!lua flags=allow-oom
--[[ sharded_pop: take up to count items from one end of a sharded list,
  stepping past any number of emptied shards; dummies are dropped.
  KEYS[1] <base>:first  KEYS[2] <base>:last  KEYS[3] optional destination list:
  when given, the items are also pushed onto its tail (a reliable move)
  ARGV[1] shard key prefix (<base>:s:)  ARGV[2] count  ARGV[3] side: "L" or "R"
  Returns: {end shard number, item, item, ...}; the end shard is the one a
  blocking reader waits on when no item came back.
  Runs when Redis is out of memory: popping frees memory. ]]
--@include sharded
local items, shard = sharded_pop(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), ARGV[3] == 'L')
if KEYS[3] and #items > 0 then
  redis.call('RPUSH', KEYS[3], unpack(items))
end
local out = {shard}
for _, v in ipairs(items) do out[#out + 1] = v end
return out
