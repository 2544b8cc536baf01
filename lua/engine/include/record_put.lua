-- record_put stores the record table r of id.
local function record_put(state_key, id, r)
  redis.call('HSET', state_key, id, cmsgpack.pack(r))
end
