-- A task's mutable record, stored in T:state once the task leaves pending
-- (and kept, with its message in T:msg, when it comes back to pending to
-- run again):
-- a msgpack array (decoded in Go by wire.Record) of
--   [1] state  [2] attempts  [3] lease token  [4] worker  [5] last error
--   [6] last failed at (ms)  [7] started at (ms)  [8] finished at (ms)
--   [9] next process at (ms)  [10] group of the current lease
--   [11] padding, in an active record: see record_pack_active
--   [12] attempts granted beyond MaxRetry+1 by operators (run_tasks): the
--        attempts field counts every start and never goes down, so an
--        operator who runs a dead task again grants it one more; absent
--        (0) until then, and [11] is then '' when there is no padding
local RECORD_DEFAULTS = {'pending', 0, 0, '', '', 0, 0, 0, 0, ''}

-- record_forget deletes what the handlers of the tasks ids wrote beside
-- their records, their progress, result and finished steps: the tasks
-- are gone.
local function record_forget(T, ids)
  if #ids == 0 then return end
  redis.call('HDEL', T .. ':progress', unpack(ids))
  redis.call('HDEL', T .. ':result', unpack(ids))
  redis.call('HDEL', T .. ':steps', unpack(ids))
end

-- record_pack_active packs the record table r of a task being leased,
-- padded (an 11th field of spaces) to more than 64 bytes:
-- hash-max-listpack-value's default, past which Redis makes T:state a
-- hash table, and keeps it one (it never converts back, and a hash created
-- by a long value starts as one). As a listpack, T:state's every lookup is
-- a scan, and a lease and its ack look up a task's record four times: with
-- a worker leasing ahead of its slots (prefetch), T:state holds about a
-- hundred leases, and the scans were a tenth of Redis's CPU per processed
-- task. The padding costs an active task a few dozen bytes.
local function record_pack_active(r)
  local rec = cmsgpack.pack(r)
  if #rec > 64 then return rec end
  r[11] = (r[11] or '') .. string.rep(' ', 65 - #rec)
  return cmsgpack.pack(r)
end

local function record_new(state, next_at)
  return cmsgpack.pack({state, 0, 0, '', '', 0, 0, 0, next_at})
end

-- record_fill gives the record table r defaults for the fields an older
-- record lacks, and returns it.
local function record_fill(r)
  for i = 1, #RECORD_DEFAULTS do
    if r[i] == nil then r[i] = RECORD_DEFAULTS[i] end
  end
  return r
end

-- record_decode turns a stored record (or false: none yet) into a table,
-- with defaults for fields an older record lacks.
local function record_decode(raw)
  if not raw then return {'pending', 0, 0, '', '', 0, 0, 0, 0, ''} end
  return record_fill(cmsgpack.unpack(raw))
end

-- record_get returns the record of id as a table, and whether it existed.
local function record_get(state_key, id)
  local raw = redis.call('HGET', state_key, id)
  return record_decode(raw), raw ~= false and raw ~= nil
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
