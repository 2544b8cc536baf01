#!lua flags=allow-oom
--[[ leases_of: the tasks of partition T leased to a worker after a time,
  so a worker whose pop or claim reply was lost (Redis ran the call, the
  reply never came back) can find the tasks it was given and never saw.
  KEYS[1] T:active  KEYS[2] T:state
  ARGV[1] worker ID  ARGV[2] after (ms: leases started later than this)
  ARGV[3] most records to read (a bound on a rare call)
  Returns: {id, token, ...} ]]
--@include record
local worker, after, budget = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
-- in chunks: unpack takes a few thousand values at most
for from = 0, budget - 1, 1000 do
  local ids = redis.call('ZRANGE', KEYS[1], from, math.min(from + 999, budget - 1))
  if #ids == 0 then break end
  local raws = redis.call('HMGET', KEYS[2], unpack(ids))
  for i, id in ipairs(ids) do
    if raws[i] then
      local r = record_decode(raws[i])
      if r[1] == 'active' and r[4] == worker and tonumber(r[7]) > after then
        out[#out + 1] = id
        out[#out + 1] = r[3]
      end
    end
  end
  if #ids < 1000 then break end
end
return out
