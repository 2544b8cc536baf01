#!lua flags=no-writes,allow-oom
--[[ counts: the size of every state of one queue partition T.
  KEYS[1] T:first  KEYS[2] T:last  KEYS[3] T:active  KEYS[4] T:scheduled
  KEYS[5] T:retry  KEYS[6] T:dead  KEYS[7] T:done  KEYS[8] T:paused
  ARGV[1] T:s: (shard key prefix)  ARGV[2] T:parked
  ARGV[3] T:stats:done:total  ARGV[4] T:stats:failed:total
  ARGV[5] T:tomb (pending tasks deleted, not yet reached: not counted)
  Returns: {pending, active, scheduled, retry, dead, done, paused (0/1),
  the oldest pending message or "", tasks held for their key (its limits
  or a pause: include/ring.lua's T:fh; or parked by a build before fair
  queues), tasks succeeded ever, attempts failed ever, {the first messages
  of the turn now, of up to 16 keys next in turn and of the key with the
  most tasks},
  groups with tasks waiting}:
  pending counts the other tasks waiting in their keys' lists too, and the
  readers take the oldest of the messages as the partition's latency, at
  a cost bounded whatever the number of keys ]]
--@include sharded
--@include fair
local T = string.sub(ARGV[1], 1, -4) -- T:s: less ':s:'
local first, last = shard_bounds(KEYS[1], KEYS[2])
local head = ''
for n = first, last do
  local items = redis.call('LRANGE', ARGV[1] .. n, 0, 1)
  for _, v in ipairs(items) do
    if v ~= DUMMY then head = v break end
  end
  if head ~= '' then break end
end
-- keys whose tasks may wait longest: the next in turn, and the busiest
local heads = {}
local waiting, held = fair_count(T)
if waiting > 0 then
  -- the tasks placed in the turn now start first (include/fair.lua)
  local cur = turns_lib().get(T)
  for _, m in ipairs(redis.call('LRANGE', T .. ':fo:' .. cur, 0, 15)) do
    if string.byte(m, 1) ~= 0 then heads[#heads + 1] = m end
  end
  local ks = redis.call('LRANGE', T .. ':fr', 0, 15)
  local top = redis.call('ZRANGE', T .. ':fz', 0, 0, 'REV')
  if #top > 0 then ks[#ks + 1] = top[1] end
  for _, key in ipairs(ks) do
    local f = fair_get(T, key)
    local m = f and redis.call('LINDEX', T .. ':fq:' .. key .. ':' .. f, 0)
    if m then heads[#heads + 1] = m end
  end
end
return {
  math.max(0, sharded_len(KEYS[1], KEYS[2], ARGV[1]) + waiting - held - (ARGV[5] and redis.call('SCARD', ARGV[5]) or 0)),
  redis.call('ZCARD', KEYS[3]),
  redis.call('ZCARD', KEYS[4]),
  redis.call('ZCARD', KEYS[5]),
  redis.call('ZCARD', KEYS[6]),
  redis.call('ZCARD', KEYS[7]),
  redis.call('EXISTS', KEYS[8]),
  head,
  tonumber(redis.call('GET', ARGV[2]) or 0) + held,
  tonumber(redis.call('GET', ARGV[3]) or 0),
  tonumber(redis.call('GET', ARGV[4]) or 0),
  heads,
  redis.call('ZCARD', T .. ':fz'),
}
