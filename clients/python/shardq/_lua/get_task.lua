#!lua flags=no-writes,allow-oom
--[[ get_task: everything one queue partition T holds about a task.
  KEYS[1] T:msg  KEYS[2] T:state  KEYS[3] T:feed:msg  KEYS[4] T:feed
  KEYS[5] T:progress  KEYS[6] T:result  KEYS[7] T:cancel  KEYS[8] T:steps
  ARGV[1] task ID
  Returns: {message or nil, record or "", feed rank or NONE, progress or nil,
  result or nil, 1 when an operator asked to cancel it, else 0, its
  finished steps (wire.Steps) or nil}; the message comes
  from T:msg when the task has a record, else from the recent feed's copy or,
  for a plain task still pending, its shard (include/pendingref.lua). nil, not "", says there is none: an empty element pushed by a foreign
  client is a message too, dead as malformed, and must be found ]]
-- The codes scripts return, and the values of ARGV that are codes, by
-- name. internal/codes/codes.go has the same names in Go (ENQ_DUPLICATE_ID
-- is codes.EnqDuplicateID); a test keeps the two files in step. A reply
-- that is yes or no is 1 or 0 and has no name.

-- no value: no feed rank, no next due time, no quota (not limited), no
-- retry (the task is dead)
local NONE = -1

-- enqueue.lua and enqueue_capped.lua: one per task; enqueue_one.lua:
-- ENQ_GUESSED, ENQ_CLOSED or the tail shard (see there)
local ENQ_PENDING = 0
local ENQ_SCHEDULED = 1
local ENQ_DUPLICATE_ID = -1
local ENQ_DUPLICATE_UNIQUE = -2
local ENQ_QUEUE_FULL = -3
local ENQ_KEY_FULL = -4
local ENQ_CLOSED = -5
local ENQ_GUESSED = -6

-- workflow_add, workflow_cancel (of the workflow, a batch among
-- them, or of the parent a new nested batch names; FLOW_CLOSED is a
-- cancelled workflow, or with a detail a batch's closed gate)
local FLOW_CREATED = 1
local FLOW_ID_TAKEN = -1
local FLOW_NOT_FOUND = -2
local FLOW_FINISHED = -3
local FLOW_CLOSED = -4
local FLOW_NAME_TAKEN = -5
local FLOW_UNKNOWN_PARENT = -6
local FLOW_TOO_BIG = -7
local FLOW_NOT_WAITING = -8
local FLOW_CYCLE = -9

-- pop and claim: why nothing was leased
local POP_OK = 0
local POP_PAUSED = 1
local POP_FULL = 2
local POP_RATE = 3
local POP_PARKED = 4

-- fail: one per task
local FAIL_STALE = 0
local FAIL_RETRY = 1
local FAIL_DEAD = 2
local FAIL_SNOOZED = 3

-- feed_read
local MARKER_NOT_FOUND = -1
-- pending_index records the rolls sharded_push returned ({i, n, ...}) for
-- items whose first feed rank is first.
local function pending_index(T, first, rolls)
  for i = 1, #rolls, 2 do
    redis.call('ZADD', T .. ':feed:shards', first + rolls[i] - 1, rolls[i + 1])
  end
end
-- pending_index_trim drops the index entries no task in the feed needs: all
-- below the one that covers the feed's lowest rank.
local function pending_index_trim(T, feed_key)
  local low = redis.call('ZRANGE', feed_key, 0, 0, 'WITHSCORES')
  if #low == 0 then return end
  local keep = redis.call('ZRANGE', T .. ':feed:shards', low[2], '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1, 'WITHSCORES')
  if #keep > 0 then
    redis.call('ZREMRANGEBYSCORE', T .. ':feed:shards', '-inf', '(' .. keep[2])
  end
end
-- pending_forget drops what trimmed feed entries leave behind: their
-- message copies in msg_key and the pending index entries no task in the
-- feed needs.
local function pending_forget(T, feed_key, msg_key, trimmed)
  if #trimmed == 0 then return end
  for j = 1, #trimmed, 1000 do
    redis.call('HDEL', msg_key, unpack(trimmed, j, math.min(#trimmed, j + 999)))
  end
  pending_index_trim(T, feed_key)
end
-- msgpack_array reads the msgpack array header at pos of m (fixarray,
-- array16 or array32) and returns its element count and the position of
-- its first element, or nil when there is none or m ends inside it.
local function msgpack_array(m, pos)
  local h = string.byte(m, pos)
  if not h then return nil end
  if h >= 0x90 and h <= 0x9f then return h - 0x90, pos + 1 end
  local w = h == 0xdc and 2 or h == 0xdd and 4
  if not w then return nil end
  local n = 0
  for i = 1, w do
    local c = string.byte(m, pos + i)
    if not c then return nil end
    n = n * 256 + c
  end
  return n, pos + 1 + w
end
-- msgpack_str reads the msgpack string at pos of m (fixstr, str8 or
-- str16: a task's strings are shorter than 64 KiB) and returns it and the
-- position after it, or nil when there is none or m ends inside it.
local function msgpack_str(m, pos)
  local h = string.byte(m, pos)
  local len, start
  if h and h >= 0xa0 and h <= 0xbf then len, start = h - 0xa0, pos + 1
  elseif h == 0xd9 then len, start = string.byte(m, pos + 1), pos + 2
  elseif h == 0xda then
    local hi, lo = string.byte(m, pos + 1, pos + 2)
    if hi and lo then len, start = hi * 256 + lo, pos + 3 end
  end
  if not len or start + len - 1 > #m then return nil end
  return string.sub(m, start, start + len - 1), start + len
end
-- msgpack_short_head reads the head every task with a generated ID and no
-- group has: a fixarray, a fixstr ID, then an empty key, or (a
-- compact message, 0x91 or 0x92) none. It returns the position of the
-- ID's last byte, or nil for any other head, which the general reader
-- (msg_head) then reads. Three calls into C instead of six, on the path
-- every pop and enqueue takes; enqueue_one.lua repeats it inline, before
-- any include.
local function msgpack_short_head(m)
  local b, b2 = string.byte(m, 1, 2)
  if b and b >= 0x90 and b <= 0x9f and b2 and b2 > 0xa0 and b2 <= 0xbf then
    local last = b2 - 0xa0 + 2
    local nb = string.byte(m, last + 1) -- the key's header; in a compact message, the type's
    if nb == 0xa0 or (nb and b <= 0x92) then return last end
  end
  return nil
end
-- A task message is a msgpack array opening with two strings: the task ID
-- and its group ("" = none). Scripts read them here without
-- decoding the rest. A compact message (a plain task, internal/wire's
-- Message) opens with 0x91 or 0x92, then its ID: it has no key.

-- msg_head returns a message's task ID and group. A message that
-- does not open that way (a foreign or corrupted push) gets the ID "bad:"
-- and its SHA1, so it can be leased like any task and sent to dead by the
-- worker that fails to decode it; a third result, true, says so. The
-- callers every leased task meets (fair_route, lease_tasks) test
-- msgpack_short_head first and call this only when it fails.
local function msg_head(m)
  local last = msgpack_short_head(m)
  if last then return string.sub(m, 3, last), '' end
  local n, pos = msgpack_array(m, 1)
  local id, nxt
  if n then id, nxt = msgpack_str(m, pos) end
  if not id or id == '' then return 'bad:' .. redis.sha1hex(m), '', true end
  if pos == 2 and (n == 1 or n == 2) then return id, '' end -- compact: no key
  return id, (msgpack_str(m, nxt)) or ''
end
-- DUMMY is the single item a blocking-pop helper pushes to wake a blocked
-- reader at once. Its first byte 0xc1 never begins valid msgpack, so no reader
-- can mistake it for a message; every path that reads a shard or an in-flight
-- list drops it. Keep in step with Dummy in internal/script and dummy in lua/sharded.go.
local DUMMY = '\193shardq:dummy'
-- shard_bounds returns the first and last shard numbers.
local function shard_bounds(first_key, last_key)
  return tonumber(redis.call('GET', first_key) or 0), tonumber(redis.call('GET', last_key) or 0)
end
-- PENDING_LOOKUP_SHARDS: the most shards a lookup reads from the one the
-- index gives (include/pendingref.lua).
local PENDING_LOOKUP_SHARDS = 8

-- pending_lookup finds the messages of tasks still pending from their feed
-- ranks: ids[i] has rank ranks[i] (false when not in the feed). It returns a
-- table id -> message for those found, less those deleted by ID (T:tomb:
-- still in a shard until a dequeue drops them). Each shard is read once.
local function pending_lookup(T, ids, ranks)
  local out, seen, loaded = {}, {}, {}
  if #ids == 0 then return out end
  local first, last = shard_bounds(T .. ':first', T .. ':last')
  local tomb = redis.call('SMISMEMBER', T .. ':tomb', unpack(ids))
  for i, id in ipairs(ids) do
    local r = ranks[i]
    if r and tomb[i] == 0 then
      local e = redis.call('ZRANGE', T .. ':feed:shards', r, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1)
      local s = math.max(first, tonumber(e[1]) or first)
      local function load(n)
        if loaded[n] then return end
        loaded[n] = true
        for _, m in ipairs(redis.call('LRANGE', T .. ':s:' .. n, 0, -1)) do
          if m ~= DUMMY then
            local mid = msg_head(m)
            if not seen[mid] then seen[mid] = m end
          end
        end
      end
      for n = s, math.min(last, s + PENDING_LOOKUP_SHARDS - 1) do
        if seen[id] then break end
        load(n)
      end
      -- a task given back to the head (a dead worker's in-flight list) sits
      -- in the first shard
      if not seen[id] then load(first) end
      out[id] = seen[id]
    end
  end
  return out
end
-- A task enqueue.lua pushed pending without a group (by the plain
-- path or the checked one) has no copy of its message in T:feed:msg: its
-- message is only in the pending list. T:feed:shards says where to look for
-- it: a zset of shard numbers, each scored by the first feed rank enqueue
-- pushed to that shard, written only when a push moves the tail pointer
-- (once per ShardSize tasks). A task of rank r is in the shard of the greatest
-- score <= r, or a later one (other writers roll shards unrecorded): readers
-- look through at most PENDING_LOOKUP_SHARDS shards from there.
local id = ARGV[1]
local msg = redis.call('HGET', KEYS[1], id) or redis.call('HGET', KEYS[3], id)
local rec = redis.call('HGET', KEYS[2], id) or ''
local rank = redis.call('ZSCORE', KEYS[4], id)
if not msg and rank then
  -- a plain task still pending: its message is only in its shard
  local T = string.sub(KEYS[1], 1, -5) -- T:msg less ':msg'
  msg = pending_lookup(T, {id}, {rank})[id] or false
end
return {msg, rec, rank and tonumber(rank) or NONE,
  redis.call('HGET', KEYS[5], id), redis.call('HGET', KEYS[6], id),
  redis.call('ZSCORE', KEYS[7], id) and 1 or 0, redis.call('HGET', KEYS[8], id)}
