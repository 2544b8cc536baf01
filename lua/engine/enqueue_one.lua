#!lua
--[[ enqueue_one: add one plain task (pending now, generated ID, not unique)
  to queue partition T: the single Enqueue's call, three commands in the
  common case (INCR, RPUSHX, ZADD) where enqueue.lua's plain path needs
  five. enqueue.lua remains the call for batches and every other task.
  KEYS[1] T:feed  KEYS[2] T:feed:rank  KEYS[3] T:guard, which never exists
    (keys.Partition.Guard)  KEYS[4] the producer's guess of the tail shard,
    T:s:<n>: the tail this call's previous reply named (T:s:-1, which never
    exists either, when there is none). The guard makes Redis refuse the
    call while the slot migrates, so the keys the general part reaches
    (T:first, T:last, T:feed:msg, shards) need not be declared, and the
    common call reads four keys, not six.
  ARGV[1] the shard size and the feed cap, packed as two 4-byte big-endian
    integers (queue.packLimits)  ARGV[2] the message, whose first element
    is the task ID (read from it: one argument less)
  Returns: (include/codes.lua) ENQ_GUESSED: enqueued into the guessed
  shard, which is still the tail; tail * 2 + hit (at least 0): enqueued,
  tail is the shard the next push goes to, for the producer's next guess,
  and hit is 1 when the guess was used, 0 when the call read T:last;
  ENQ_CLOSED: the partition is closed (see enqueue.lua) and nothing was
  written. One integer, not a table: a reply
  table and each of its values are made and converted per call.

  Why the guess is safe. The push is RPUSHX: it lands only in a shard that
  exists, that is, holds items, so it is one of first..last, which every
  reader walks. Every shard but the tail and the head was full when the tail
  moved past it, so a push into one of them overflows the size: it is taken
  back (RPOP) and the call goes the general way (GET T:last). A push into
  the head shard that is not the tail (a stale guess while the head still
  drains) is delivered before the tail's items, as a task given back to the
  head is; readers look for it there (include/pendingref.lua). A guess into
  a shard that is gone (emptied, or the queue deleted) pushes nothing. A
  push that fills the tail moves T:last on, as sharded_push does; one that
  fills the head, which is not the tail, leaves T:last alone.

  Why no check for a closed partition. A closed partition's rank counter
  holds a mark that INCR refuses (include/closed.lua), so the first
  command, run before any write, is the check.

  Why the common call comes first, before any include but the codes (which
  are numbers, not functions). Redis runs the whole script body on every
  call, so every helper an include defines is a closure made per call: for this script that cost about as much as its
  three commands (callgrind, see docs/ARCHITECTURE.md), and so did the
  reply table it no longer has. The call that counts (a counter that
  counts, a guess that lands in the tail with room left, a task with no
  group, no feed trim due) is written out here and returns
  before any of them is defined; every other call goes on below with what
  the first part did, and does what the general way did. ]]
--@include codes
-- the shard size and the feed cap come packed, 4 bytes each, big-endian:
-- one call into C where tonumber's strtod cost as much as the ZADD
local s1, s2, s3, s4, c1, c2, c3, c4 = string.byte(ARGV[1], 1, 8)
local size = ((s1 * 256 + s2) * 256 + s3) * 256 + s4
local cap = ((c1 * 256 + c2) * 256 + c3) * 256 + c4
local guess_key, msg = KEYS[4], ARGV[2]

-- INCR, not INCRBY 1: Redis 7.0 formats every number a script passes with
-- snprintf("%.17g"), a tenth of this call's cost for the two it had
local rank = redis.pcall('INCR', KEYS[2])
-- len is what the guessed push returned; nil when it was not tried
local len
if type(rank) == 'number' and rank > 1 then
  -- an unkeyed task in the layout every generated ID has: a short array, a
  -- short ID, then "" or, in a compact message (0x91, 0x92), no key at all
  -- (include/msgpack_short_head.lua, the test msg_keyed makes first). A task with
  -- a key waits in its turn or its key's list (include/fair.lua), below.
  local b, b2 = string.byte(msg, 1, 2)
  -- the byte after a short ID: the key's header, or a compact message's type's
  local nb = b2 and b2 > 0xa0 and b2 <= 0xbf and string.byte(msg, b2 - 0xa0 + 3)
  if b and b >= 0x90 and b <= 0x9f and nb and (nb == 0xa0 or b <= 0x92) then
    len = redis.call('RPUSHX', guess_key, msg)
    -- feed_trim_step in plain arithmetic: no call into C
    local step = (cap - cap % 16) / 16
    if step > 256 then step = 256 elseif step < 1 then step = 1 end
    if len > 0 and len < size and (cap <= 0 or rank % step ~= 0) then
      redis.call('ZADD', KEYS[1], rank, string.sub(msg, 3, b2 - 0xa0 + 2))
      return ENQ_GUESSED
    end
  end
end

--@include sharded
--@include feed
--@include pendingref
--@include msg_keyed
--@include closed
--@include fair
local T = string.sub(KEYS[1], 1, -6) -- T:feed less ":feed"
local first_key, last_key, feed_msg = T .. ':first', T .. ':last', T .. ':feed:msg'
local id = msg_head(msg)
local guess = tonumber(string.match(guess_key, ':s:(%d+)$')) or NONE
if type(rank) == 'table' then
  -- closed, or another refusal: that one is the reply, naming the key
  if rank_closed(redis.call('GET', KEYS[2])) then return ENQ_CLOSED end
  return {err = rank.err .. ' (rank counter ' .. KEYS[2] .. ')'}
end
rank = feed_resume(KEYS[1], KEYS[2], rank, 1)

local keyed = msg_keyed(msg)
local rolls, empty, tail, hit = {}, false, guess, 0
if keyed then
  -- it waits in its key's list; the reply still names the tail shard
  local _, key = msg_head(msg)
  fair_route(T, {msg}, false, size)
  len, tail = 0, tonumber(redis.call('GET', last_key) or 0)
elseif not len and guess >= 0 then
  len = redis.call('RPUSHX', guess_key, msg)
end
len = len or 0
if len > size then
  redis.call('RPOP', guess_key)
  len = 0
end
if keyed then
  hit = 0
elseif len > 0 then
  hit = 1
  if len >= size and tonumber(redis.call('GET', last_key) or 0) == guess then
    -- the push filled the tail: the next goes to a new shard
    tail = guess + 1
    redis.call('SET', last_key, tail)
    rolls = {2, tail}
  end
else
  len, rolls, empty, tail = sharded_push(first_key, last_key, T .. ':s:', size, {msg}, false)
end

if keyed or empty then
  -- as in enqueue.lua: a keyed task waits away from the shards, and one
  -- pushed into an empty shard may sit in a blocked worker's in-flight
  -- list until its claim
  redis.call('HSET', feed_msg, id, msg)
end
local _, trimmed = feed_insert(KEYS[1], {id}, rank, cap)
pending_index(T, rank, rolls)
pending_forget(T, KEYS[1], feed_msg, trimmed)
return tail * 2 + hit
