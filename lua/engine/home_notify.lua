#!lua flags=allow-oom
--[[ home_notify: apply a batch of flow notifications at their home H.
  KEYS[1] H:out
  ARGV[1] H  ARGV[2] now (ms, "" = server time)  ARGV[3..] notifications
    (wire.FlowNote, as ack and fail write them into T:notify)
  Idempotent: every notification moves one task's state (see
  include/home_apply.lua), so one delivered twice changes nothing.
  Returns: {state changes, outbox entries due now} ]]
--@include time
--@include home_apply
local H = ARGV[1]
local now = now_ms(ARGV[2])
local changed = 0
local runs = {} -- one per workflow: its outcomes are applied in one pass
for i = 3, #ARGV do
  if home_apply(H, ARGV[i], now, runs) then changed = changed + 1 end
end
for _, r in pairs(runs) do wf_lib().finish(r) end
-- the outbox entries visible now
return {changed, redis.call('ZCOUNT', H .. ':out', '-inf', now)}
