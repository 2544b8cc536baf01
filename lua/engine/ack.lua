#!lua flags=allow-oom
--[[ ack: finish a batch of tasks that succeeded (see include/acks.lua).
  KEYS[1] T:active  KEYS[2] T:msg  KEYS[3] T:state  KEYS[4] T:feed:msg
  KEYS[5] T:done  KEYS[6] T:done:rank  KEYS[7] T:expire
  ARGV[1] T  ARGV[2] now (ms, "" = server time)  ARGV[3] done feed cap
  ARGV[4] shard size  ARGV[5] fields per task (2, 4 or 5)  ARGV[6..] the
  tasks: id, token and, with 4, retention (ms, 0 = not kept) and unique
  key ("" = none), and with 5 the flow ref (see include/acks.lua)
  A busy worker's acks usually ride in its next pop or claim instead.
  Returns: one code per task: 1 acked, 0 stale token or already finished ]]
--@include acks
return ack_tasks(ARGV[1], now_ms(ARGV[2]), ARGV, 5, tonumber(ARGV[3]), tonumber(ARGV[4]))
