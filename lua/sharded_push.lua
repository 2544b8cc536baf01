#!lua
--[[ sharded_push: add items at one end of a sharded list, in one call.
  KEYS[1] <base>:first  KEYS[2] <base>:last
  ARGV[1] shard key prefix (<base>:s:)  ARGV[2] shard size  ARGV[3] side: "L" or "R"
  ARGV[4..] items; read from that end they come out in this order
  Returns: the number of items pushed ]]
--@include sharded
local items = {}
for i = 4, #ARGV do items[#items + 1] = ARGV[i] end
sharded_push(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]), items, ARGV[3] == 'L')
return #items
