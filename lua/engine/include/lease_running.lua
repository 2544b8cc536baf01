-- lease_running adds running (key -> tasks leased) to the keys' running
-- counts in T:keyactive: one read and one write for the batch.
local function lease_running(T, running)
  local ks = {}
  for key in pairs(running) do ks[#ks + 1] = key end
  local cur, set = redis.call('HMGET', T .. ':keyactive', unpack(ks)), {}
  for j2, key in ipairs(ks) do
    set[2 * j2 - 1], set[2 * j2] = key, string.format('%d', (tonumber(cur[j2]) or 0) + running[key])
  end
  redis.call('HSET', T .. ':keyactive', unpack(set))
end
