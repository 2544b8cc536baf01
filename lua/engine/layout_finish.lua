#!lua
--[[ layout_finish: end a queue's drain once its removed partitions hold
  nothing: its layout goes from "<route>/<serve>" to "<route>/<route>", but
  only if it is still the layout the caller checked (an operator's
  SetPartitions may have come in between).
  KEYS[1] <prefix>:layout
  ARGV[1] queue  ARGV[2] the layout checked  ARGV[3] the layout to set
  Returns: 1 when set, 0 when the layout had changed. ]]
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
