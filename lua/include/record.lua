-- A task's mutable record, stored in T:state once the task leaves pending:
-- a msgpack array (decoded in Go by wire.Record) of
--   [1] state  [2] attempts  [3] lease token  [4] worker  [5] last error
--   [6] last failed at (ms)  [7] started at (ms)  [8] finished at (ms)
--   [9] next process at (ms)  [10] concurrency key of the current lease
local RECORD_DEFAULTS = {'pending', 0, 0, '', '', 0, 0, 0, 0, ''}

local function record_new(state, next_at)
  return cmsgpack.pack({state, 0, 0, '', '', 0, 0, 0, next_at})
end

-- record_get returns the record of id as a table (defaults for a task that
-- has none yet, or fields an older record lacks), and whether it existed.
local function record_get(state_key, id)
  local raw = redis.call('HGET', state_key, id)
  local r = {}
  local got = raw and cmsgpack.unpack(raw) or {}
  for i = 1, #RECORD_DEFAULTS do
    if got[i] == nil then r[i] = RECORD_DEFAULTS[i] else r[i] = got[i] end
  end
  return r, raw ~= false and raw ~= nil
end

local function record_put(state_key, id, r)
  redis.call('HSET', state_key, id, cmsgpack.pack(r))
end

-- record_held returns the record of id when the task is active under token
-- (the caller's lease is current), or nil when the caller's claim is stale.
local function record_held(state_key, id, token)
  local r, ok = record_get(state_key, id)
  if not ok or r[1] ~= 'active' or tonumber(r[3]) ~= tonumber(token) then
    return nil
  end
  return r
end
