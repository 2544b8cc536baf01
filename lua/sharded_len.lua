#!lua flags=no-writes,allow-oom
--[[ sharded_len: count the items of a sharded list.
  KEYS[1] <base>:first  KEYS[2] <base>:last
  ARGV[1] shard key prefix (<base>:s:)
  Returns: the number of items ]]
--@include sharded
return sharded_len(KEYS[1], KEYS[2], ARGV[1])
