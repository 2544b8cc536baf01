#!lua
--[[ step: record the finished steps of a running task (worker.Step).
  KEYS[1] T:state  KEYS[2] T:steps (id -> the task's finished steps,
  wire.Steps: every step so far, so a write needs no read)
  ARGV[1] task ID  ARGV[2] lease token  ARGV[3] the steps
  Only the task's current lease writes: a worker whose lease was taken
  over (reaped, handed to another worker) would record a step that the
  new holder may be running again. The steps go with the task: ack,
  delete, reap and the dead feed's trim drop them (record_forget).
  Returns: 1 written, 0 a stale token, nothing written ]]
--@include record
if not record_held(KEYS[1], ARGV[1], ARGV[2]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1
