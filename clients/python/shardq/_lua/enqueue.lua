#!lua
--[[ enqueue: add a batch of tasks to one queue partition T.
  KEYS[1] T:first  KEYS[2] T:last  KEYS[3] T:feed  KEYS[4] T:feed:rank
  KEYS[5] T:feed:msg  KEYS[6] T:scheduled  KEYS[7] T:msg  KEYS[8] T:state
  KEYS[9] T:guard, which never exists (keys.Partition.Guard): declared so that
    Redis refuses this script while its slot migrates, as it reaches shards
  ARGV[1] T, the partition's key prefix (for T:s:<n>, T:unique:<key>,
    T:ids:<bucket>:<shard>: include/idclaim.lua)
  ARGV[2] now (ms, "" = server time)  ARGV[3] shard size  ARGV[4] feed cap
  ARGV[5] fields per task: 2 when every task is plain (pending now, generated
    id, not unique), else 7
  ARGV[6..] per task: message, id, and with 7 fields: due at (ms, 0 = now),
    due in (ms, 0 = now), unique key ("" = none), unique ttl (ms; < 0: until
    the task finishes, then -ttl - 1 ms: include/unique.lua), id claim
    ttl (ms, 0 = generated id: no claim)
  Returns: one code per task (include/codes.lua): ENQ_PENDING, ENQ_SCHEDULED,
  ENQ_DUPLICATE_ID, ENQ_DUPLICATE_UNIQUE, or ENQ_CLOSED: the partition is
  closed (include/closed.lua: its queue's partition count was lowered and
  it drains; every task gets ENQ_CLOSED and nothing
  is written). Every check runs before the first write, so a rejected task
  changes nothing and the others are enqueued. ]]
-- Only what the plain path needs is included before it: every definition
-- is a statement run at each call, so the checked path's own (time,
-- record) come after the plain path has returned.
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
-- rank_closed reports whether a rank counter's value (GET's reply) marks
-- its partition closed.
local function rank_closed(v)
  return v ~= false and v ~= nil and string.sub(v, 1, 7) == 'closed:'
end
-- rank_count returns the count a rank counter's value holds, marked or not
-- (0 when missing).
local function rank_count(v)
  if not v then return 0 end
  return tonumber(string.match(v, '(%d+)$')) or 0
end
-- A closed partition (its queue's partition count was lowered: it drains
-- and takes no new task) is marked in its rank counter, T:feed:rank, which
-- then holds "closed:<count>" (partition_state.lua writes and clears it).
-- The mark is the only record of the state: every enqueue path reads the
-- counter anyway, and INCR refuses a counter that is not an integer, so
-- the single enqueue (enqueue_one.lua) needs no check of its own.
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
-- sharded_push adds items at one end (left when left is true) so that, read
-- from that end, they come out in the order given. It rolls to a new shard
-- whenever the end shard is full and returns the new length of that end shard.
-- A tail push that fills its shard moves the tail pointer on at once, so the
-- tail shard always has room and one item (a single enqueue) costs GET and
-- RPUSH, not a length check before it. A tail push also returns its rolls,
-- {i, n, ...}: from item i on (#items + 1: the next push) items go to shard
-- n; none in the common case; whether the first item went into an empty
-- shard (where a blocked reader's move may take it); and the end pointer
-- after the push (for a tail push, the shard the next item goes to).
local function sharded_push(first_key, last_key, prefix, size, items, left)
  local ptr_key = left and first_key or last_key
  local n = tonumber(redis.call('GET', ptr_key) or 0)
  local rolls, empty = {}, false
  if not left and #items == 1 then
    local len = redis.call('RPUSH', prefix .. n, items[1])
    if len > size then
      -- the shard was full (a head push filled it): the item goes on to the next
      redis.call('RPOP', prefix .. n)
      n = n + 1
      redis.call('SET', ptr_key, n)
      rolls = {1, n}
      len = redis.call('RPUSH', prefix .. n, items[1])
    end
    if len >= size then
      n = n + 1
      redis.call('SET', ptr_key, n)
      rolls[#rolls + 1], rolls[#rolls + 2] = 2, n
    end
    return len, rolls, len == 1, n
  end
  local cmd = left and 'LPUSH' or 'RPUSH'
  local step = left and -1 or 1
  local seq = items
  if left then
    seq = {}
    for i = #items, 1, -1 do seq[#seq + 1] = items[i] end
  end
  local i, len = 1, 0
  while i <= #seq do
    local room = size - redis.call('LLEN', prefix .. n)
    if i == 1 then empty = room == size end
    if room <= 0 then
      n = n + step
      redis.call('SET', ptr_key, n)
      room = size
      if not left then rolls[#rolls + 1], rolls[#rolls + 2] = i, n end
    end
    local j = math.min(#seq, i + room - 1)
    len = redis.call(cmd, prefix .. n, unpack(seq, i, j))
    i = j + 1
  end
  if not left and len >= size then
    n = n + 1
    redis.call('SET', ptr_key, n)
    rolls[#rolls + 1], rolls[#rolls + 2] = #seq + 1, n
  end
  return len, rolls, empty, n
end
-- zset_top_score returns the highest score in the sorted set key, or nil.
local function zset_top_score(key)
  local top = redis.call('ZRANGE', key, 0, 0, 'REV', 'WITHSCORES')
  if #top == 0 then return nil end
  return tonumber(top[2])
end
-- feed_resume takes the reply of an INCRBY by n of the rank counter and
-- returns the last of the n ranks to give. A missing counter (or one at 0)
-- restarts from the feed's highest rank (0 when the feed is empty: no reader
-- can hold a marker ranked above that).
local function feed_resume(feed_key, rank_key, last, n)
  if last == n then
    local top = zset_top_score(feed_key)
    if top and top > 0 then
      last = redis.call('INCRBY', rank_key, top)
    end
  end
  return last
end
-- feed_trim_step is how many ranks pass between two trims of a feed of
-- capacity cap: a trim costs up to seven commands (with the message copies
-- and the pending index), so a busy feed trims once per step appends, a
-- sixteenth of its cap and at most 256 (0.03 commands per single enqueue at
-- the default 10,000), and holds at most cap + step - 1 members meanwhile.
-- A small feed trims at every append. enqueue_one.lua repeats this
-- formula inline, before any include: change both together.
local function feed_trim_step(cap)
  return math.max(1, math.min(256, math.floor(cap / 16)))
end
-- feed_insert adds members ranked first, first + 1, ... (ranks the caller
-- took from the counter) and trims the feed as feed_append says.
local function feed_insert(feed_key, members, first, cap)
  local n = #members
  local last = first + n - 1
  local zargs = {}
  for i = 1, n do
    zargs[#zargs + 1] = first + i - 1
    zargs[#zargs + 1] = members[i]
    if #zargs >= 1000 then
      redis.call('ZADD', feed_key, unpack(zargs))
      zargs = {}
    end
  end
  if #zargs > 0 then redis.call('ZADD', feed_key, unpack(zargs)) end
  local trimmed = {}
  if cap > 0 then
    local step = feed_trim_step(cap)
    if math.floor(last / step) ~= math.floor((first - 1) / step) then
      local over = redis.call('ZCARD', feed_key) - cap
      if over > 0 then
        trimmed = redis.call('ZRANGE', feed_key, 0, over - 1)
        redis.call('ZREMRANGEBYRANK', feed_key, 0, over - 1)
      end
    end
  end
  return first, trimmed
end
-- feed_append adds members with consecutive ranks, trims the feed to its
-- newest cap members (cap 0 = unbounded; see feed_trim_step for when) and
-- returns the first rank given and the list of trimmed members, so the
-- caller can delete what they owned. The common append costs INCRBY and
-- ZADD: the counter's absence shows in INCRBY's reply (feed_resume), not in
-- a check before it.
local function feed_append(feed_key, rank_key, members, cap)
  local n = #members
  if n == 0 then return 0, {} end
  local last = feed_resume(feed_key, rank_key, redis.call('INCRBY', rank_key, n), n)
  return feed_insert(feed_key, members, last - n + 1, cap)
end
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
-- shard_bounds returns the first and last shard numbers.
local function shard_bounds(first_key, last_key)
  return tonumber(redis.call('GET', first_key) or 0), tonumber(redis.call('GET', last_key) or 0)
end
-- DUMMY is the single item a blocking-pop helper pushes to wake a blocked
-- reader at once. Its first byte 0xc1 never begins valid msgpack, so no reader
-- can mistake it for a message; every path that reads a shard or an in-flight
-- list drops it. Keep in step with Dummy in internal/script and dummy in lua/sharded.go.
local DUMMY = '\193shardq:dummy'
-- sharded_pop removes up to count items from one end, moving the end pointer
-- past every shard it empties, and returns them in pop order with dummies
-- dropped. It also returns the end shard number after the pop: the shard a
-- blocking reader should wait on.
local function sharded_pop(first_key, last_key, prefix, count, left)
  local first, last = shard_bounds(first_key, last_key)
  local cmd = left and 'LPOP' or 'RPOP'
  local out = {}
  while #out < count do
    local cur = left and first or last
    local want = count - #out
    local got = redis.call(cmd, prefix .. cur, want) or {}
    for _, v in ipairs(got) do
      if v ~= DUMMY then out[#out + 1] = v end
    end
    if #got < want then
      -- this shard is empty now: step to the next one, if there is one
      if first >= last then break end
      if left then
        first = first + 1
        redis.call('SET', first_key, first)
      else
        last = last - 1
        redis.call('SET', last_key, last)
      end
    end
  end
  return out, (left and first or last)
end
-- sharded_len counts the items of every shard between the end pointers,
-- less any dummy. A dummy is only ever pushed at the end a blocked reader
-- takes from, so it can only sit near the head of the first shard or the
-- tail of the last: looking at 16 items at each end finds it, in bounded time.
local function sharded_len(first_key, last_key, prefix)
  local first, last = shard_bounds(first_key, last_key)
  local total = 0
  for n = first, last do
    total = total + redis.call('LLEN', prefix .. n)
  end
  total = total - #redis.call('LPOS', prefix .. first, DUMMY, 'COUNT', 0, 'MAXLEN', 16)
  if last ~= first then
    total = total - #redis.call('LPOS', prefix .. last, DUMMY, 'RANK', -1, 'COUNT', 0, 'MAXLEN', 16)
  end
  return math.max(total, 0)
end
-- A sharded list (Redis in Action 11.4) is a chain of lists <base>:s:<n>, each
-- holding at most `size` items, between the shard numbers stored at
-- <base>:first and <base>:last (both 0 when missing). Bounded shards keep
-- every key small however long the list grows.
-- The fair queues' keys and a key's states, named. A task with a
-- group does not wait in its partition's pending list: it is
-- placed in the list of its turn (turns_place), or waits in a list of its
-- key, whose keys take their turns from the ring (fair_take), so a key
-- with a long backlog delays the others by one turn, not by its backlog.
-- Each key below is T (the partition's prefix) followed by its suffix; the
-- suffixes are the wire format of every partition written so far.
--
-- A key with no task waiting leaves every structure but T:fw and T:fp,
-- which hold what an operator set. Every step costs the same whatever a
-- key's backlog and however many keys there are: a key is reached by its
-- turn, and one that may not start (paused, at its limits) leaves the ring
-- at its turn and comes back when that changes, so no turn walks it again.
--
-- Turns are kept in order: every key's placed tasks fill consecutive
-- turns from the one now, so turn r+1 holds tasks only if turn r does, but
-- for the turn now. A key with more than TURNS_AHEAD turns of tasks, a
-- paused key and every key of a limited partition keep the rest in their
-- list, behind a marker in the turn of their last placed task: when it is
-- reached, the key joins the ring, whose keys take one turn each after the
-- turn's list. A key's tasks waiting are its list's (T:fz) and its placed
-- tasks whose position is past what was taken of their turn: counted
-- exactly, with no write per take.
--
-- The keys, named by their suffix after T. Scripts spell the suffix itself
-- (T .. ':fk'), as this table and the docs do, so a search finds both; a
-- Lua table of names would be built again at every call of every script
-- that includes this, the plain enqueue among them.
--
-- T:fr list: the ring, the keys whose tasks may start, in turn order. The
--   head's turn is now. The member "" stands for the partition's pending
--   list, the tasks with no key.
-- T:ft string "<credit> <key>": what is left of the head key's turn;
--   absent, or naming another key: a whole turn.
-- T:fk hash: key -> "first last state" for each key with a list: its tasks
--   wait in the shards T:fq:<key>:<first..last>, as a sharded list does;
--   state is one of the letters below.
-- T:fq:<key>:<n> list: shard n of key's list.
-- T:fz zset: key -> the tasks in its list, for each key with one (a key
--   with placed tasks only: its placed count, for the order of Keys).
-- T:fl zset: the same keys, all scored 0: in the order of their names, for
--   readers that page through every key's tasks.
-- T:fn string: the tasks waiting in every key's shards and turns.
-- T:fw hash: key -> its weight, for keys an operator weighted; a turn
--   takes up to weight tasks. Others weigh 1.
-- T:fp set: the keys an operator paused, with tasks or not.
-- T:fd zset: key -> when its GroupRate lets it start one more (state
--   waiting).
-- T:fs string: present while "" is in the ring.
-- T:fh string: the tasks held: waiting in the shards of keys out of the
--   ring (states busy, paused, waiting), which QueueInfo counts as Waiting,
--   not Pending.
-- T:kr:<key> zset: the starts of key within its GroupRate's window.
-- T:fo:<r> list: turn r's placed tasks, in start order, and markers
--   ('\0' .. key: every placed task of key was reached; no message, a
--   msgpack array, begins with that byte).
-- T:fi string "cur popped pass": the turn now; how many items left its
--   list's head; and, once that list is done, how many ring turns are left
--   in this turn (0: the list's part). Absent while no task is placed.
-- T:fa hash: key -> "lr fill trickle marked r:p ...", for keys with placed
--   tasks: the last turn holding one, how many it holds, the list shard
--   trickled tasks go to (-1: none), whether a marker waits in turn lr, and
--   each placed task's turn and position in it.
-- T:fe zset: key -> lr, the same keys: the turn after which their records
--   go.
-- T:fx hash: key -> 1: keys whose placed tasks go to their list as they
--   are reached (paused, or limited since), so no task of a key overtakes an
--   older one.
--
-- A key's state, the last letter of its T:fk record; scripts spell the
-- letter and name the state in a comment:
--   'r' ring: in the ring
--   'm' marked: behind its placed tasks: its marker brings it in
--   'b' busy: at its GroupConcurrency
--   'p' paused: paused by an operator
--   'w' waiting: waiting for its GroupRate (T:fd)
-- fair_get returns the first and last shard and the state of key, or nil
-- when key has no task waiting.
local function fair_get(T, key)
  local v = redis.call('HGET', T .. ':fk', key)
  if not v then return nil end
  local f, l, s = string.match(v, '^(-?%d+) (-?%d+) (%a)$')
  return tonumber(f), tonumber(l), s
end
-- fair_set records key's list: its first and last shard and its state
-- (a letter: fair_layout).
local function fair_set(T, key, first, last, state)
  redis.call('HSET', T .. ':fk', key, first .. ' ' .. last .. ' ' .. state)
end
-- fair_wake wakes a worker blocked on the partition's pending list: its
-- blocking move waits on the head shard, which holds nothing when one
-- waits there, so a dummy in an empty head shard is all it takes, and a
-- head shard that holds anything needs none.
local function fair_wake(T)
  local head = T .. ':s:' .. tonumber(redis.call('GET', T .. ':first') or 0)
  if redis.call('LLEN', head) == 0 then redis.call('LPUSH', head, DUMMY) end
end
-- fair_enter puts key at the ring's tail: its turn comes after every key
-- already there.
local function fair_enter(T, key)
  if redis.call('RPUSH', T .. ':fr', key) == 1 then fair_wake(T) end
end
-- fair_back brings a key out of the ring (state busy, paused or waiting)
-- back into it: its tasks are no longer held.
local function fair_back(T, key, first, last)
  if redis.call('HEXISTS', T .. ':fa', key) == 1 then
    -- tasks of it placed in turns (turns_place) are still to be reached,
    -- and its list's tasks come after them: its marker brings it into the
    -- in the ring
    fair_set(T, key, first, last, 'm') -- marked
  else
    fair_set(T, key, first, last, 'r') -- in the ring
    fair_enter(T, key)
  end
  redis.call('INCRBY', T .. ':fh', -tonumber(redis.call('ZSCORE', T .. ':fz', key) or 0))
end
-- fair_held reports whether a key in state s is out of the ring and held:
-- its tasks count as waiting, not pending.
local function fair_held(s)
  return s == 'b' or s == 'p' or s == 'w' -- busy, paused or waiting
end
-- fair_shards_push pushes msgs into a key's shards at one end, rolling to
-- a new shard past size items, and returns the new first and last shards.
-- Read from that end, the messages come out in the order given.
local function fair_shards_push(prefix, first, last, size, msgs, left)
  if left then
    for i = #msgs, 1, -1 do
      if redis.call('LPUSH', prefix .. first, msgs[i]) > size then
        redis.call('LPOP', prefix .. first)
        first = first - 1
        redis.call('LPUSH', prefix .. first, msgs[i])
      end
    end
    return first, last
  end
  local i = 1
  while i <= #msgs do
    local room = size - redis.call('LLEN', prefix .. last)
    if room <= 0 then
      last = last + 1
      room = size
    end
    local j = math.min(#msgs, i + room - 1)
    redis.call('RPUSH', prefix .. last, unpack(msgs, i, j))
    i = j + 1
  end
  return first, last
end
-- fair_push adds msgs, all of key, at the tail of its tasks (or at their
-- head, for tasks given back), and brings key into the ring when it had
-- none waiting and is not paused.
local function fair_push(T, key, msgs, left, size)
  local first, last, state = fair_get(T, key)
  local new = first == nil
  if new then first, last = 0, 0 end
  local f, l = fair_shards_push(T .. ':fq:' .. key .. ':', first, last, size, msgs, left)
  if new then
    state = 'r' -- in the ring
    if redis.call('SISMEMBER', T .. ':fp', key) == 1 then state = 'p' end -- paused
    fair_set(T, key, f, l, state)
    redis.call('ZADD', T .. ':fl', 0, key)
    if state == 'r' then fair_enter(T, key) end -- in the ring
  elseif f ~= first or l ~= last then
    fair_set(T, key, f, l, state)
  end
  redis.call('ZINCRBY', T .. ':fz', #msgs, key)
  redis.call('INCRBY', T .. ':fn', #msgs)
  if fair_held(state) then redis.call('INCRBY', T .. ':fh', #msgs) end
end
-- fair_release is key_release's part: a key that was at its
-- GroupConcurrency has a slot again, so it takes its place in the ring.
local function fair_release(T, key)
  local first, last, state = fair_get(T, key)
  if state == 'b' then fair_back(T, key, first, last) end -- busy
end
-- fair_resume brings a paused key back: into the ring when it has tasks
-- and left the ring while paused.
local function fair_resume(T, key)
  redis.call('SREM', T .. ':fp', key)
  local first, last, state = fair_get(T, key)
  if state == 'p' then fair_back(T, key, first, last) end -- paused
end
-- fair_read returns up to count messages from the head of shards
-- first..last of prefix, without taking them, and how many it read from
-- each shard.
local function fair_read(prefix, first, last, count)
  local out, per = {}, {}
  for n = first, last do
    if #out >= count then break end
    local got = redis.call('LRANGE', prefix .. n, 0, count - #out - 1)
    per[#per + 1] = #got
    for _, v in ipairs(got) do out[#out + 1] = v end
  end
  return out, per
end
-- fair_due brings the keys whose GroupRate lets them start again back into
-- the ring, and returns the ms until the next one may (NONE: none waits).
local function fair_due(T, now)
  local due = redis.call('ZRANGE', T .. ':fd', '-inf', now, 'BYSCORE', 'LIMIT', 0, 256)
  for _, key in ipairs(due) do
    redis.call('ZREM', T .. ':fd', key)
    local first, last, state = fair_get(T, key)
    if state == 'w' then -- waiting
      if redis.call('SISMEMBER', T .. ':fp', key) == 1 then
        fair_set(T, key, first, last, 'p') -- paused
      else
        fair_back(T, key, first, last)
      end
    end
  end
  local next = redis.call('ZRANGE', T .. ':fd', 0, 0, 'WITHSCORES')
  if #next == 0 then return NONE end
  return math.max(1, tonumber(next[2]) - now)
end
-- fair_plain_count returns the tasks in the partition's pending list. A
-- dummy that woke no reader (fair_wake's, or a blocked reader's helper's)
-- sits at the head: it is no task, or a turn of "" would take it alone.
local function fair_plain_count(T, size)
  local first, last = shard_bounds(T .. ':first', T .. ':last')
  local head = T .. ':s:' .. first
  local n = redis.call('LLEN', head)
  if n == 0 then
    if first == last then return 0 end
  else
    n = n - #redis.call('LPOS', head, DUMMY, 'COUNT', 0, 'MAXLEN', 16)
  end
  if last > first then
    n = n + (last - first - 1) * size + redis.call('LLEN', T .. ':s:' .. last)
  end
  return n
end
-- fair_plain puts "" in the ring when the partition's pending list holds
-- tasks and "" is not there: the tasks with no key take their turns too.
local function fair_plain(T, size)
  if redis.call('EXISTS', T .. ':fs') == 1 then return end
  if fair_plain_count(T, size) == 0 then return end
  redis.call('SET', T .. ':fs', 1)
  redis.call('RPUSH', T .. ':fr', '')
end
-- fair_route is defined in include/fair_route.lua, which routes tasks to
-- turns or keys' lists and needs this file's function; the take routes
-- the keyed tasks an older producer left in the pending list with it.
local fair_route

-- fair_take takes up to n messages, turn by turn: each key of the ring
-- in order gives up to its weight (the head what is left of its turn),
-- within its GroupConcurrency and GroupRate, then waits for its next turn at
-- the ring's tail; "" gives the tasks of the partition's pending list. A
-- key that may not start leaves the ring. The turns of one call are
-- planned first, from reads alone (fair_take_plan); then the shards the
-- plan takes from are touched (fair_take_touch), so on a slot that
-- migrates a key already moved away stops the script before anything was
-- taken; then the plan is carried out (fair_take_write, fair_take_ring).
-- It returns the messages, the ms until a key waiting for its GroupRate may
-- start again (NONE: none waits), whether keys the call did not reach may
-- start now (the caller looks again at once), and how many turns it gave.
-- It gives at most max_turns turns; leased (key -> tasks) holds the tasks
-- of keys taken earlier in the same call, which their GroupConcurrency
-- counts, and gets this call's.
--
-- Its helpers are defined inside it, where their files are included: each
-- helper is a closure made per call of the code that defines it, and a
-- plain pop never takes a turn.
local function fair_take(T, n, lim, now, size, max_turns, leased)
-- fair_take_limits fills in k, the plan's entry of a key with a list
-- (rec: its T:fk record; avail: its T:fz count; stopped: paused; running:
-- its tasks running), from the record and the key's limits: what it may
-- give, and its fate when it may not start now (the state busy, paused
-- or waiting, until k.due).
local function fair_take_limits(c, k, rec, avail, stopped, running)
  local lim, now = c.lim, c.now
  local f, l = string.match(rec, '^(-?%d+) (-?%d+)')
  k.first, k.last = tonumber(f), tonumber(l)
  -- the head shard's name, built from the record's own digits: a number
  -- joined to a string is formatted, which costs more
  k.head = c.T .. ':fq:' .. k.key .. ':' .. f
  k.avail = tonumber(avail or 0) or 0
  k.room = math.huge
  if stopped then k.fate = 'p' end -- paused
  if k.fate == 'turn' and lim.keyconc > 0 then
    k.room = lim.keyconc - tonumber(running or 0) - (c.leased[k.key] or 0)
    if k.room <= 0 then k.fate = 'b' end -- busy
  end
  if k.fate == 'turn' and lim.keyrate > 0 then
    local log = c.T .. ':kr:' .. k.key
    redis.call('ZREMRANGEBYSCORE', log, '-inf', now - lim.per)
    local used = redis.call('ZCARD', log)
    if lim.keyrate - used < k.room then
      k.room, k.ratebound = lim.keyrate - used, true
    end
    if k.room <= 0 then
      local oldest = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
      k.fate, k.due = 'w', math.max(now + 1, (tonumber(oldest[2]) or now) + lim.per) -- waiting
    end
  end
end
-- fair_take_load reads the ring's next count keys into the plan c: what
-- each may give, and which may not start now. An entry's fate is "turn"
-- while it may take turns, "gone" once it has no task left, or a state
-- (a letter of fair_layout) it leaves the ring in. It returns false at the ring's end.
local function fair_take_load(c, count)
  local T, keys = c.T, c.keys
  local from = #keys
  local got = redis.call('LRANGE', T .. ':fr', from, from + count - 1)
  if #got == 0 then return false end
  local recs = redis.call('HMGET', T .. ':fk', unpack(got))
  local avail = redis.call('ZMSCORE', T .. ':fz', unpack(got))
  local weights = redis.call('EXISTS', T .. ':fw') == 1 and redis.call('HMGET', T .. ':fw', unpack(got)) or {}
  local stops = redis.call('EXISTS', T .. ':fp') == 1 and redis.call('SMISMEMBER', T .. ':fp', unpack(got)) or {}
  local running = c.lim.keyconc > 0 and redis.call('HMGET', T .. ':keyactive', unpack(got)) or {}
  for j, key in ipairs(got) do
    local i = from + j
    keys[i] = key
    local w = weights[j]
    -- every field a key may get, set here: a table sized once
    local k = {key = key, took = 0, fate = 'turn', weight = w and math.max(1, tonumber(w) or 1) or 1,
      avail = 0, room = 0, first = 0, last = 0, head = false, items = false, next = 1,
      ratebound = false, due = false}
    c.ks[i] = k
    if key == '' then
      k.avail = fair_plain_count(T, c.size)
      k.room = math.huge
    elseif not recs[j] then
      k.fate = 'gone'
    else
      fair_take_limits(c, k, recs[j], avail[j], stops[j] == 1, running[j])
    end
    if k.fate == 'turn' and k.avail <= 0 then k.fate = 'gone' end
    if k.fate == 'turn' then c.queue[#c.queue + 1] = i end
  end
  return #got == count
end
-- fair_take_turn plans the turn of the i-th key of the plan c, when want
-- tasks are still wanted, and returns how many it takes. A key that took
-- its last task, or reached a limit, gets its fate; one cut short by want
-- keeps the rest of its turn for the next call (c.head); any other waits
-- for its next turn, after the others'.
local function fair_take_turn(c, i, want)
  local k = c.ks[i]
  c.visited[i] = true
  local credit = k.weight
  if i == 1 and c.turn_key == k.key and c.turn_left > 0 and k.took == 0 then credit = c.turn_left end
  local t = math.min(credit, k.room - k.took, k.avail - k.took, want)
  k.took, want = k.took + t, want - t
  c.nt = c.nt + 1
  c.turns[c.nt], c.turnn[c.nt] = i, t
  if want == 0 and t < credit and k.avail > k.took and k.room > k.took then
    c.head = {i, credit - t} -- the rest of its turn comes first next time
  elseif k.avail <= k.took then
    k.fate = 'gone'
  elseif k.room <= k.took then
    if k.ratebound then
      k.fate, k.due = 'w', c.now + math.max(1, math.floor(c.lim.per / c.lim.keyrate)) -- waiting
    else
      k.fate = 'b' -- busy
    end
  else
    c.queue[#c.queue + 1] = i -- its next turn, after the others'
  end
  return t
end
-- FAIR_WINDOW: the most keys of the ring one call reads.
local FAIR_WINDOW = 1000

-- fair_take_plan plans the turns of the call c, from reads alone: in ring
-- order, round after round, until n are taken or max_turns given, over the
-- ring's first n keys (a key taking several turns when there are few),
-- and over more of them while every key read so far has left and fewer
-- than n were taken, up to FAIR_WINDOW keys. It returns whether keys past
-- the window may start: the call ran out of window, not keys.
local function fair_take_plan(c, n, max_turns)
  local queue, want = c.queue, n
  c.more = fair_take_load(c, math.min(n, FAIR_WINDOW))
  while want > 0 and c.nt < max_turns do
    if c.q > #queue then
      -- every key read so far left the ring: read on
      if not c.more or #c.keys >= FAIR_WINDOW then break end
      c.more = fair_take_load(c, math.min(math.max(want, 16), FAIR_WINDOW - #c.keys))
    end
    if c.q <= #queue then
      local i = queue[c.q]
      c.q = c.q + 1
      want = want - fair_take_turn(c, i, want)
    elseif not c.more then
      break
    end
  end
  return want > 0 and c.q > #queue and c.more and #c.keys >= FAIR_WINDOW
end
-- fair_take_touch reads every shard the plan c takes from, in one call
-- before any write, so a shard moved away by a slot migration fails the
-- call here; a turn spans two shards at most while n is at most the shard
-- size, but the bound covers any n.
local function fair_take_touch(c)
  local T, size, touch = c.T, c.size, {}
  for _, k in ipairs(c.ks) do
    if k.took > 0 and k.key ~= '' then
      touch[#touch + 1] = k.head
      for f = k.first + 1, math.min(k.last, k.first + math.ceil(k.took / size)) do
        touch[#touch + 1] = T .. ':fq:' .. k.key .. ':' .. f
      end
    elseif k.took > 0 then
      fair_read(T .. ':s:', c.plain_first, c.plain_last, k.took + 2)
    end
  end
  for j = 1, #touch, 1000 do redis.call('EXISTS', unpack(touch, j, math.min(#touch, j + 999))) end
end
-- fair_take_plain takes the tasks the plan c gave "" (k) from the
-- partition's pending list; "" leaves the ring once that list is empty.
local function fair_take_plain(c, k)
  local T = c.T
  if k.took > 0 then
    local items = sharded_pop(T .. ':first', T .. ':last', T .. ':s:', k.took, true)
    -- a task with a key in the pending list (enqueued by an older
    -- producer) joins its key's tasks instead
    k.items = fair_route(T, items, false, c.size)
    local f, l = shard_bounds(T .. ':first', T .. ':last')
    if f == l and redis.call('LLEN', T .. ':s:' .. f) == 0 then k.fate = 'gone' end
  end
  if k.fate == 'gone' then redis.call('DEL', T .. ':fs') end
end
-- fair_take_key takes the tasks the plan c gave key k from its list,
-- counts them against its GroupRate, and records where its list starts and
-- its state; a key with tasks left adds its count to backlog (count, key,
-- ...). It returns the tasks taken and those left held (its key is out of
-- the ring).
local function fair_take_key(c, k, backlog)
  local T, key, lim, now = c.T, k.key, c.lim, c.now
  local items, f = {}, k.first
  if k.took == 1 then
    -- one task, the common turn: LPOP without a count answers it alone
    items[1] = redis.call('LPOP', k.head) or nil
  end
  while #items < k.took do
    local got = redis.call('LPOP', f == k.first and k.head or T .. ':fq:' .. key .. ':' .. f, string.format('%d', k.took - #items))
    if got then
      for _, v in ipairs(got) do items[#items + 1] = v end
    end
    if #items >= k.took or f >= k.last then break end
    f = f + 1 -- that shard is empty now
  end
  k.items = items
  c.leased[key] = (c.leased[key] or 0) + #items
  if lim.keyrate > 0 then
    local log = T .. ':kr:' .. key
    for _, m in ipairs(items) do
      redis.call('ZADD', log, now, msg_head(m) .. ':' .. now)
    end
    redis.call('PEXPIRE', log, lim.per)
  end
  local left, held = k.avail - #items, 0
  if left <= 0 then
    k.fate = 'gone'
    return #items, 0
  end
  backlog[#backlog + 1] = string.format('%d', left)
  backlog[#backlog + 1] = key
  if f < k.last and redis.call('EXISTS', T .. ':fq:' .. key .. ':' .. f) == 0 then f = f + 1 end
  local state = 'r' -- in the ring
  if k.fate == 'b' or k.fate == 'w' then -- busy or waiting
    state = k.fate
    held = left
  end
  if f ~= k.first or state ~= 'r' then fair_set(T, key, f, k.last, state) end -- in the ring
  return #items, held
end
-- fair_take_write carries out the plan c: it takes each key's tasks and
-- puts each key in its place, and changes the counters of every key in
-- one call each.
local function fair_take_write(c)
  local T, now = c.T, c.now
  local taken, held, backlog, gone = 0, 0, {}, {}
  for _, k in ipairs(c.ks) do
    local key = k.key
    if key == '' then
      fair_take_plain(c, k)
    elseif k.took > 0 then
      local n, h = fair_take_key(c, k, backlog)
      taken, held = taken + n, held + h
    elseif k.fate == 'b' or k.fate == 'p' or k.fate == 'w' then -- busy, paused or waiting
      fair_set(T, key, k.first, k.last, k.fate)
      held = held + k.avail
    end
    if k.fate == 'gone' and key ~= '' then
      gone[#gone + 1] = key
    elseif k.fate == 'w' then -- waiting
      redis.call('ZADD', T .. ':fd', k.due, key)
      if c.wait == NONE or k.due - now < c.wait then c.wait = math.max(1, k.due - now) end
    end
  end
  if taken > 0 then redis.call('INCRBY', T .. ':fn', -taken) end
  if held > 0 then redis.call('INCRBY', T .. ':fh', held) end
  for j = 1, #backlog, 1000 do redis.call('ZADD', T .. ':fz', unpack(backlog, j, math.min(#backlog, j + 999))) end
  for j = 1, #gone, 1000 do
    local to = math.min(#gone, j + 999)
    redis.call('ZREM', T .. ':fz', unpack(gone, j, to))
    redis.call('ZREM', T .. ':fl', unpack(gone, j, to))
    redis.call('HDEL', T .. ':fk', unpack(gone, j, to))
  end
end
-- fair_take_out returns the messages the plan c took, in the order of
-- the turns that took them.
local function fair_take_out(c)
  local out, no = {}, 0
  for x = 1, c.nt do
    local k = c.ks[c.turns[x]]
    local items = k.items
    for _ = 1, c.turnn[x] do
      local m = items and items[k.next]
      if m then
        no = no + 1
        out[no] = m
      end
      k.next = k.next + 1
    end
  end
  return out
end
-- fair_take_ring writes the ring after the plan c: the head with the rest
-- of its turn, then the keys of the window that had no turn, then the
-- keys past the window, then the keys that had a turn, in the order of
-- their next ones.
local function fair_take_ring(c)
  local ring, ks, queue, head = c.T .. ':fr', c.ks, c.queue, c.head
  local unvisited, tail = {}, {}
  for i, k in ipairs(ks) do
    if k.fate == 'turn' and not c.visited[i] then unvisited[#unvisited + 1] = k.key end
  end
  for x = c.q, #queue do
    local i = queue[x]
    if c.visited[i] and ks[i].fate == 'turn' and not (head and head[1] == i) then tail[#tail + 1] = ks[i].key end
  end
  redis.call('LTRIM', ring, #c.keys, -1)
  for x = #unvisited, 1, -1 do redis.call('LPUSH', ring, unvisited[x]) end
  if head then
    redis.call('LPUSH', ring, ks[head[1]].key)
    redis.call('SET', c.T .. ':ft', head[2] .. ' ' .. ks[head[1]].key)
  else
    redis.call('DEL', c.T .. ':ft')
  end
  if #tail > 0 then redis.call('RPUSH', ring, unpack(tail)) end
end
  -- the call's state, which the helpers share: ks[i] is the i-th key read
  -- from the ring (keys[i] its name), queue the indexes of keys in the
  -- order of their turns, turns and turnn each turn's key and tasks
  local c = {T = T, lim = lim, now = now, size = size, leased = leased, wait = NONE,
    turn_key = nil, turn_left = 0, plain_first = 0, plain_last = 0,
    ks = {}, keys = {}, queue = {}, q = 1, more = false, visited = {},
    turns = {}, turnn = {}, nt = 0, head = nil}
  if redis.call('EXISTS', T .. ':fd') == 1 then c.wait = fair_due(T, now) end
  fair_plain(T, size)
  local turn = redis.call('GET', T .. ':ft')
  if turn then
    local k, key = string.match(turn, '^(%d+) (.*)$')
    c.turn_left, c.turn_key = tonumber(k), key
  end
  c.plain_first, c.plain_last = shard_bounds(T .. ':first', T .. ':last')
  local unreached = fair_take_plan(c, n, max_turns)
  if #c.keys == 0 then return {}, c.wait, false, 0 end
  fair_take_touch(c)
  fair_take_write(c)
  local out = fair_take_out(c)
  fair_take_ring(c)
  return out, c.wait, unreached, c.nt
end
-- fair_forget drops key from every structure but what an operator set:
-- it has no task waiting any more.
local function fair_forget(T, key)
  redis.call('ZREM', T .. ':fz', key)
  redis.call('ZREM', T .. ':fl', key)
  redis.call('HDEL', T .. ':fk', key)
  redis.call('ZREM', T .. ':fd', key)
  redis.call('LREM', T .. ':fr', 0, key) -- an operator's purge: the ring's length
  local turn = redis.call('GET', T .. ':ft')
  if turn and string.match(turn, '^%d+ (.*)$') == key then redis.call('DEL', T .. ':ft') end
end
-- fair_purge_lists takes up to n messages from the keys' lists, the busiest
-- keys first (100 keys a call at most), and returns them: an operator
-- empties a backlog. A key it empties leaves every structure.
local function fair_purge_lists(T, n)
  local out = {}
  if n <= 0 then return out end
  for _, key in ipairs(redis.call('ZRANGE', T .. ':fz', 0, 99, 'REV')) do
    if #out >= n then break end
    local first, last, state = fair_get(T, key)
    if first then
      local prefix = T .. ':fq:' .. key .. ':'
      local items, per = fair_read(prefix, first, last, n - #out)
      for j, c in ipairs(per) do
        if c > 0 then redis.call('LTRIM', prefix .. (first + j - 1), c, -1) end
      end
      for _, m in ipairs(items) do out[#out + 1] = m end
      redis.call('INCRBY', T .. ':fn', -#items)
      if fair_held(state) then redis.call('INCRBY', T .. ':fh', -#items) end
      if tonumber(redis.call('ZINCRBY', T .. ':fz', -#items, key)) <= 0 then
        fair_forget(T, key)
      else
        local f = first
        while f < last and redis.call('EXISTS', prefix .. f) == 0 do f = f + 1 end
        if f ~= first then fair_set(T, key, f, last, state) end
      end
    end
  end
  return out
end
-- fair_count returns the tasks waiting in every key's shards, and how
-- many of them are held (their keys are out of the ring).
local function fair_count(T)
  local v = redis.call('MGET', T .. ':fn', T .. ':fh')
  return tonumber(v[1] or 0), math.max(0, tonumber(v[2] or 0))
end
-- The ring of fair queues: every function of it, one file each. A
-- task with a group waits in a list of its key, whose keys take
-- their turns from the ring (fair_take); the keys and states are named
-- in include/fair_layout.lua.
-- Turns (T:fo:<r> and the keys after it in fair_layout). A key whose
-- backlog is short, in a partition with no key limits, needs no list of
-- its own: enqueue places each of its tasks straight in the list of the
-- turn it will start in, up to its weight per turn, so a pop takes a run
-- of tasks from one list, as from a plain queue, and touches no key.

-- turns holds the turns' helpers, made by the first call that needs them
-- (turns_lib): every helper defined is a closure made per script call,
-- so a call that touches no keyed task, such as a plain pop, makes none.
-- Their files are included inside turns_lib for that; each one's includes
-- of the ring's functions above are inlined here, at the top, first.
local turns

local function turns_lib()
  if turns then return turns end
-- turns_get returns the turn now, the items taken from its list, the ring
-- turns left in it, and whether any task is placed (T:fi).
local function turns_get(T)
  local v = redis.call('GET', T .. ':fi')
  if not v then return 0, 0, 0, false end
  local c, p, s = string.match(v, '^(%d+) (%d+) (%d+)$')
  return tonumber(c), tonumber(p), tonumber(s), true
end
-- turns_rec decodes a T:fa record: nil when there is none. lr is the last
-- turn holding a placed task of the key, fill how many it holds there, t
-- the list shard trickled tasks go to (-1: none), mk whether a marker
-- waits in turn lr, and pos each placed task's {turn, position}.
local function turns_rec(v)
  if not v then return nil end
  local lr, fill, t, mk, rest = string.match(v, '^(-?%d+) (%d+) (-?%d+) (%d)(.*)$')
  local pos = {}
  for r, p in string.gmatch(rest, ' (%d+):(%d+)') do pos[#pos + 1] = {tonumber(r), tonumber(p)} end
  return {lr = tonumber(lr), fill = tonumber(fill), t = tonumber(t), mk = mk == '1', pos = pos}
end
-- turns_left reports whether a placed task at turn r, position p, was not
-- taken yet.
local function turns_left(r, p, cur, popped)
  return r > cur or (r == cur and p > popped)
end
-- turns_waiting counts a record's placed tasks not taken yet.
local function turns_waiting(a, cur, popped)
  local n = 0
  for _, e in ipairs(a.pos) do
    if turns_left(e[1], e[2], cur, popped) then n = n + 1 end
  end
  return n
end
-- turns_base returns the first turn a new task may be placed in: the turn
-- now while its list is being taken, else the next.
local function turns_base(cur, pass)
  if pass > 0 then return cur + 1 end
  return cur
end
-- turns_pack encodes a record (turns_rec), keeping the positions of tasks
-- not taken.
local function turns_pack(a, cur, popped)
  local parts = {string.format('%d %d %d %d', a.lr, a.fill, a.t, a.mk and 1 or 0)}
  for _, e in ipairs(a.pos) do
    if turns_left(e[1], e[2], cur, popped) then parts[#parts + 1] = string.format('%d:%d', e[1], e[2]) end
  end
  return table.concat(parts, ' ')
end
-- turns_drop forgets the placed tasks of keys ks, all reached: their
-- records go. A key with no list leaves every structure but what an
-- operator set; a key whose list waited behind them (state marked) joins
-- the ring, or is held when paused.
local function turns_drop(T, ks)
  if #ks == 0 then return end
  local lists = redis.call('HMGET', T .. ':fk', unpack(ks))
  redis.call('HDEL', T .. ':fa', unpack(ks))
  redis.call('ZREM', T .. ':fe', unpack(ks))
  if redis.call('EXISTS', T .. ':fx') == 1 then redis.call('HDEL', T .. ':fx', unpack(ks)) end
  local gone = {}
  for i, key in ipairs(ks) do
    if not lists[i] then
      gone[#gone + 1] = key
    elseif string.sub(lists[i], -1) == 'm' then -- marked
      local first, last = fair_get(T, key)
      if redis.call('SISMEMBER', T .. ':fp', key) == 1 then
        fair_set(T, key, first, last, 'p') -- paused
        redis.call('INCRBY', T .. ':fh', tonumber(redis.call('ZSCORE', T .. ':fz', key) or 0))
      else
        fair_set(T, key, first, last, 'r') -- in the ring
        fair_enter(T, key)
      end
    end
  end
  if #gone > 0 then
    redis.call('ZREM', T .. ':fz', unpack(gone))
    redis.call('ZREM', T .. ':fl', unpack(gone))
  end
end
-- turns_mark puts key's marker after its last placed task, once.
local function turns_mark(T, key, a)
  if a.mk then return end
  redis.call('RPUSH', T .. ':fo:' .. a.lr, '\0' .. key)
  a.mk = true
end
-- turns_list_push adds msgs to the list of a key that has no list but
-- placed tasks still to be reached: they wait behind those, so the key
-- takes state marked (or paused) and its marker brings it into the ring.
local function turns_list_push(T, key, a, msgs, left, size, paused)
  local f, l = fair_shards_push(T .. ':fq:' .. key .. ':', 0, 0, size, msgs, left)
  local state = paused and 'p' or 'm' -- paused or marked
  fair_set(T, key, f, l, state)
  redis.call('ZADD', T .. ':fz', #msgs, key) -- was the placed count: now the list's
  redis.call('ZADD', T .. ':fl', 0, key)
  redis.call('INCRBY', T .. ':fn', #msgs)
  if paused then redis.call('INCRBY', T .. ':fh', #msgs) end
  turns_mark(T, key, a)
end
-- turns_push adds msgs of key to its list (fair_push), minding tasks of it
-- placed in turns: its list waits behind them.
local function turns_push(T, key, msgs, left, size)
  if redis.call('HEXISTS', T .. ':fk', key) == 0 then
    local a = turns_rec(redis.call('HGET', T .. ':fa', key))
    if a then
      local cur, popped, pass = turns_get(T)
      if a.lr >= turns_base(cur, pass) or turns_waiting(a, cur, popped) > 0 then
        local paused = redis.call('SISMEMBER', T .. ':fp', key) == 1
        turns_list_push(T, key, a, msgs, left, size, paused)
        redis.call('HSET', T .. ':fa', key, turns_pack(a, cur, popped))
        return
      end
      turns_drop(T, {key}) -- every placed task was taken
    end
  end
  fair_push(T, key, msgs, left, size)
end
-- turns_put records the turn now, the items taken from its list and the
-- ring turns left in it (T:fi), as turns_get reads them.
local function turns_put(T, cur, popped, pass)
  redis.call('SET', T .. ':fi', string.format('%d %d %d', cur, popped, pass))
end
-- turns_call runs a variadic command over items, 1,000 at a time (a
-- call's arguments are bounded by Lua's stack), and returns the replies
-- joined; step 1,000 keeps field-value pairs whole.
local function turns_call(cmd, key, items)
  local out = {}
  for j = 1, #items, 1000 do
    local r = redis.call(cmd, key, unpack(items, j, math.min(#items, j + 999)))
    if type(r) == 'table' then
      for _, v in ipairs(r) do out[#out + 1] = v end
    end
  end
  return out
end
-- turns_slot appends m to the list the placement p builds for turn r, and
-- returns its position there (p.torder: the turns in the order first
-- used).
local function turns_slot(p, r, m)
  local list = p.turns[r]
  if not list then
    list = {}
    p.turns[r] = list
    p.torder[#p.torder + 1] = r
  end
  list[#list + 1] = m
  return #list
end
-- TURNS_AHEAD: how many turns ahead of the turn now a key's tasks are
-- placed; the rest wait in its list, behind its marker.
local TURNS_AHEAD = 16

-- turns_place_key plans, in the placement p, the turns of the tasks of key
-- (bykey[key]; rec its T:fa record, w its weight, base the first turn a
-- task may go to): it fills the turns from its last one, up to w per turn
-- and TURNS_AHEAD turns ahead, and leaves the rest in bykey[key], behind
-- a marker.
local function turns_place_key(p, key, bykey, rec, w, base)
  local a = turns_rec(rec) or {lr = 0, fill = 0, t = -1, mk = false, pos = {}}
  if a.lr < base or not rec then a.lr, a.fill = base - 1, w end
  local msgs, i = bykey[key], 1
  while i <= #msgs do
    local r = a.fill < w and a.lr or a.lr + 1
    if r >= base + TURNS_AHEAD then break end
    if r ~= a.lr then a.lr, a.fill = r, 0 end
    a.fill = a.fill + 1
    a.pos[#a.pos + 1] = {r, turns_slot(p, r, msgs[i]), true}
    i = i + 1
  end
  if i == 1 then return end
  a.mk = false -- a marker of an earlier placement is stale now
  p.total = p.total + i - 1
  local rest = {}
  for x = i, #msgs do rest[#rest + 1] = msgs[x] end
  bykey[key] = rest
  p.placed[#p.placed + 1] = {key, a, #rest}
  if #rest > 0 then
    turns_slot(p, a.lr, '\0' .. key)
    a.mk = true
  end
end
-- turns_place_write writes the placement p (turns_place_key's) in the turn
-- cur, popped items of it taken: one push per turn, and one write per
-- structure for every key placed.
local function turns_place_write(T, p, cur, popped)
  local offset = {}
  for _, r in ipairs(p.torder) do
    local list, len = p.turns[r], 0
    for j = 1, #list, 1000 do len = redis.call('RPUSH', T .. ':fo:' .. r, unpack(list, j, math.min(#list, j + 999))) end
    offset[r] = len - #list + (r == cur and popped or 0)
  end
  local arec, ends, counts, names = {}, {}, {}, {}
  for _, e in ipairs(p.placed) do
    local key, a, rest = e[1], e[2], e[3]
    for _, pos in ipairs(a.pos) do
      if pos[3] then pos[2], pos[3] = offset[pos[1]] + pos[2], nil end
    end
    arec[#arec + 1], arec[#arec + 2] = key, turns_pack(a, cur, popped)
    ends[#ends + 1], ends[#ends + 2] = a.lr, key
    names[#names + 1], names[#names + 2] = 0, key
    if rest == 0 then
      -- a key with no list: T:fz holds its placed count, for the order of Keys
      counts[#counts + 1], counts[#counts + 2] = turns_waiting(a, cur, popped), key
    end
  end
  turns_call('HSET', T .. ':fa', arec)
  turns_call('ZADD', T .. ':fe', ends)
  turns_call('ZADD', T .. ':fl', names)
  turns_call('ZADD', T .. ':fz', counts)
  redis.call('INCRBY', T .. ':fn', p.total)
end
-- turns_place places the tasks of the keys in order (key -> its messages
-- in bykey) that may go straight into turns: keys with no list, not
-- paused, not trickling, in a partition with no key limits. Each key
-- fills the turns from its last one (the turn now for a new key), up to
-- its weight per turn and TURNS_AHEAD turns ahead; the rest of its tasks
-- stay in bykey for its list (turns_push), behind its marker. One push
-- per turn for the batch, and one write per structure.
local function turns_place(T, order, bykey)
  if redis.call('EXISTS', T .. ':limits') == 1 then
    local l = redis.call('HMGET', T .. ':limits', 'keyconc', 'keyrate')
    if (tonumber(l[1]) or 0) > 0 or (tonumber(l[2]) or 0) > 0 then return end
  end
  local cur, popped, pass, live = turns_get(T)
  local base = turns_base(cur, pass)
  local lists = turns_call('HMGET', T .. ':fk', order)
  local recs = turns_call('HMGET', T .. ':fa', order)
  local paused = redis.call('EXISTS', T .. ':fp') == 1 and turns_call('SMISMEMBER', T .. ':fp', order) or {}
  local held = redis.call('EXISTS', T .. ':fx') == 1 and turns_call('HMGET', T .. ':fx', order) or {}
  local weights = redis.call('EXISTS', T .. ':fw') == 1 and turns_call('HMGET', T .. ':fw', order) or {}
  local p = {turns = {}, torder = {}, placed = {}, total = 0}
  for j, key in ipairs(order) do
    if not lists[j] and paused[j] ~= 1 and not held[j] then
      local w = weights[j] and math.max(1, tonumber(weights[j]) or 1) or 1
      turns_place_key(p, key, bykey, recs[j], w, base)
    end
  end
  if #p.torder == 0 then return end
  if not live then
    cur, popped, pass = 0, 0, 0
    turns_put(T, 0, 0, 0)
  end
  local was = redis.call('EXISTS', T .. ':fo:' .. cur, T .. ':fo:' .. (cur + 1))
  turns_place_write(T, p, cur, popped)
  if was == 0 then fair_wake(T) end
end
-- turns_pause: a paused key's placed tasks go to its list as they are
-- reached, and a list waiting for its marker is held.
local function turns_pause(T, key)
  local a = turns_rec(redis.call('HGET', T .. ':fa', key))
  if not a then return end
  local cur, popped, pass = turns_get(T)
  if a.lr < turns_base(cur, pass) and turns_waiting(a, cur, popped) == 0 then
    turns_drop(T, {key})
    return
  end
  turns_mark(T, key, a)
  redis.call('HSET', T .. ':fa', key, turns_pack(a, cur, popped))
  redis.call('HSET', T .. ':fx', key, 1)
  local first, last, state = fair_get(T, key)
  if state == 'm' then -- marked
    fair_set(T, key, first, last, 'p') -- paused
    redis.call('INCRBY', T .. ':fh', tonumber(redis.call('ZSCORE', T .. ':fz', key) or 0))
  end
end
-- turns_resume: a resumed key with no list starts its placed tasks as
-- they are reached again (one with a list waits for its marker: see
-- fair_back).
local function turns_resume(T, key)
  if redis.call('HEXISTS', T .. ':fk', key) == 0 then redis.call('HDEL', T .. ':fx', key) end
end
-- turns_pop_ring gives up to turns turns of the ring (fair_take) in the
-- pop p, wanting want tasks: their messages join p.out. It returns how
-- many it took and the turns it gave.
local function turns_pop_ring(p, want, turns)
  local msgs, due, unr, nt = fair_take(p.T, want, p.lim, p.now, p.size, turns, p.leased)
  for _, m in ipairs(msgs) do p.out[#p.out + 1] = m end
  if due ~= NONE and (p.wait == NONE or due < p.wait) then p.wait = due end
  p.unreached = p.unreached or unr
  return #msgs, nt
end
-- turns_reached: key's marker was reached in turn cur, so was every task
-- of it placed in turns, unless it was placed again since (a later turn
-- holds its marker, if it has one).
local function turns_reached(T, key, cur)
  local a = turns_rec(redis.call('HGET', T .. ':fa', key))
  if a and a.lr > cur then return end
  turns_drop(T, {key})
end
-- turns_trickle moves m, a placed task of key reached while key may not
-- start it (paused, or limited), to key's list: after the tasks trickled
-- before it, before the tasks the list had, so a key's tasks start in
-- order. The key's list waits until its marker.
local function turns_trickle(T, key, m, cur, popped)
  local a = turns_rec(redis.call('HGET', T .. ':fa', key)) or {lr = cur, fill = 1, t = -1, mk = false, pos = {}}
  local first, last, state = fair_get(T, key)
  local t = a.t
  if not first then
    -- a new list: later tasks of the key go to shard 1, after this one
    state = redis.call('SISMEMBER', T .. ':fp', key) == 1 and 'p' or 'm' -- paused or marked
    t, first, last = 0, 0, 1
    fair_set(T, key, first, last, state)
    redis.call('ZADD', T .. ':fz', 0, key) -- the list's count from now on
  elseif t < first then
    t, first = first - 1, first - 1
    fair_set(T, key, first, last, state)
  end
  redis.call('RPUSH', T .. ':fq:' .. key .. ':' .. t, m)
  redis.call('ZINCRBY', T .. ':fz', 1, key)
  if fair_held(state) then redis.call('INCRBY', T .. ':fh', 1) end
  a.t = t
  turns_mark(T, key, a)
  redis.call('HSET', T .. ':fa', key, turns_pack(a, cur, popped))
  redis.call('ZADD', T .. ':fe', a.lr, key)
  redis.call('HSET', T .. ':fx', key, 1)
end
-- turns_pop_keys returns, for the items got from the turn's list in the
-- pop p, the key of each task (keyof[i]) and the keys that trickle
-- (hold[key]: in T:fx), when any task may have to go to its key's list;
-- else both empty.
local function turns_pop_keys(p, got)
  local keyof, hold = {}, {}
  if not (p.trickle_all or p.fx) or #got == 0 then return keyof, hold end
  local ks = {}
  for i, v in ipairs(got) do
    if string.byte(v, 1) ~= 0 then -- not a marker ('\0')
      local _, key = msg_head(v)
      keyof[i] = key
      ks[#ks + 1] = key
    end
  end
  if p.fx and #ks > 0 then
    for j, h in ipairs(turns_call('HMGET', p.T .. ':fx', ks)) do
      if h then hold[ks[j]] = true end
    end
  end
  return keyof, hold
end
-- turns_pop_used returns how many of the items got from the turn's list
-- the pop p takes: up to want tasks that start; markers and tasks that go
-- to their keys' lists do not count.
local function turns_pop_used(p, got, keyof, hold, want)
  local used, starts = 0, 0
  for i, v in ipairs(got) do
    if starts >= want then break end
    used = i
    if string.byte(v, 1) ~= 0 and not (keyof[i] and (p.trickle_all or hold[keyof[i]])) then starts = starts + 1 end
  end
  return used
end
-- turns_pop_touch reads the shards the first used items' trickles go to,
-- before the pop p's first write, so a shard moved away by a slot
-- migration fails the call before anything changed.
local function turns_pop_touch(p, keyof, hold, used)
  local T, tk, seen = p.T, {}, {}
  for i = 1, used do
    local key = keyof[i]
    if key and (p.trickle_all or hold[key]) and not seen[key] then
      seen[key] = true
      tk[#tk + 1] = key
    end
  end
  if #tk == 0 then return end
  local ls, as, touch = turns_call('HMGET', T .. ':fk', tk), turns_call('HMGET', T .. ':fa', tk), {}
  for j, key in ipairs(tk) do
    local first = ls[j] and tonumber(string.match(ls[j], '^(-?%d+)'))
    local a = turns_rec(as[j])
    local t = 0
    if first then t = (a and a.t >= first) and a.t or first - 1 end
    touch[#touch + 1] = T .. ':fq:' .. key .. ':' .. t
  end
  for j = 1, #touch, 1000 do redis.call('EXISTS', unpack(touch, j, math.min(#touch, j + 999))) end
end
-- turns_pop_list takes, in the pop p, up to want tasks from the turn's
-- list: a window of it, as markers and tasks that go to their lists do not
-- count against want; while tasks may go to their lists it reads past
-- them, else markers are few and the next round reads on. A marker
-- brings its key into the ring; a task of a trickling key goes to its
-- key's list. Once the list is done the ring's keys take their turns,
-- "" among them when the pending list has tasks (p.pass). It returns
-- whether the turn is over: its list done and no ring turn left.
local function turns_pop_list(p, want)
  local T, cur = p.T, p.cur
  local list = T .. ':fo:' .. cur
  local window = (p.trickle_all or p.fx) and math.max(want, 128) or want
  local got = redis.call('LRANGE', list, 0, window - 1)
  local keyof, hold = turns_pop_keys(p, got)
  local used = turns_pop_used(p, got, keyof, hold, want)
  turns_pop_touch(p, keyof, hold, used)
  if used > 0 then redis.call('LTRIM', list, used, -1) end
  p.popped = p.popped + used
  for i = 1, used do
    local v = got[i]
    if string.byte(v, 1) == 0 then -- a marker ('\0')
      turns_reached(T, string.sub(v, 2), cur)
    elseif keyof[i] and (p.trickle_all or hold[keyof[i]]) then
      turns_trickle(T, keyof[i], v, cur, p.popped)
    else
      p.out[#p.out + 1] = v
      p.taken = p.taken + 1
    end
  end
  if used == #got and #got < window then
    fair_plain(T, p.size)
    p.pass = redis.call('LLEN', T .. ':fr')
    if p.pass == 0 then return true end
  end
  return false
end
-- turns_clean forgets up to 1,000 keys whose last placed task was in a
-- turn up to upto, all taken: a key left no record after its last task.
-- It returns whether any such key is left.
local function turns_clean(T, upto)
  local ks = redis.call('ZRANGE', T .. ':fe', '-inf', upto, 'BYSCORE', 'LIMIT', 0, 1000)
  turns_drop(T, ks)
  return #ks == 1000
end
-- turns_pop_next ends the pop p's turn: it moves to the next turn when
-- that holds placed tasks, dropping the records of keys whose last one was
-- in the turn left. When nothing placed waits, the ring alone serves the
-- rest of the n wanted, T:fi goes once no record is left, and it returns
-- true: the pop is done.
local function turns_pop_next(p, n)
  local T = p.T
  p.pass = 0
  if redis.call('EXISTS', T .. ':fo:' .. (p.cur + 1)) == 1 then
    turns_clean(T, p.cur)
    p.cur, p.popped = p.cur + 1, 0
  elseif redis.call('EXISTS', T .. ':fo:' .. p.cur) == 0 then
    -- nothing placed waits: the ring alone, as before any was
    if not turns_clean(T, p.cur) and redis.call('EXISTS', T .. ':fe') == 0 then
      redis.call('DEL', T .. ':fi')
      p.live = false
    end
    if n - #p.out > 0 then turns_pop_ring(p, n - #p.out, math.huge) end
    return true
  end
  return false
end
-- fair_pop takes up to n messages, turn by turn: each turn gives the
-- tasks placed in it (turns_pop_list), then one turn to each key of the
-- ring (fair_take); with nothing placed, the ring alone. A placed task of
-- a key in T:fx, and every placed task under a key limit, goes to its
-- key's list instead (turns_trickle); a marker brings its key into the
-- ring. It returns the messages, the ms until a key waiting for its
-- GroupRate may start again (NONE: none waits), and whether keys the call
-- did not reach may start now.
local function fair_pop(T, n, lim, now, size)
  local cur, popped, pass, live = turns_get(T)
  if not live then
    local out, wait, unreached = fair_take(T, n, lim, now, size, math.huge, {})
    return out, wait, unreached
  end
  -- on a slot that migrates, a structure moved away fails the call here,
  -- before any write
  redis.call('EXISTS', T .. ':fa', T .. ':fe', T .. ':fx', T .. ':fk', T .. ':fz',
    T .. ':fl', T .. ':fr', T .. ':fn', T .. ':fh', T .. ':fp',
    T .. ':fo:' .. cur, T .. ':fo:' .. (cur + 1))
  local trickle_all = lim.keyconc > 0 or lim.keyrate > 0
  -- the pop's state, which its helpers share
  local p = {T = T, lim = lim, now = now, size = size, cur = cur, popped = popped, pass = pass,
    live = live, trickle_all = trickle_all, fx = not trickle_all and redis.call('EXISTS', T .. ':fx') == 1,
    out = {}, wait = NONE, unreached = false, taken = 0, leased = {}}
  local rounds = 0
  while n - #p.out > 0 do
    rounds = rounds + 1
    if rounds > 64 then
      -- bounded work per call: the caller looks again at once
      p.unreached = true
      break
    end
    local done = false -- the turn is over: its list and its ring turns
    if p.pass == 0 then done = turns_pop_list(p, n - #p.out) end
    if p.pass > 0 and n - #p.out > 0 then
      local w = n - #p.out
      local got, nt = turns_pop_ring(p, w, p.pass)
      p.pass = p.pass - nt
      if got < w or p.pass <= 0 then done = true end
    end
    if done and turns_pop_next(p, n) then break end
  end
  if p.taken > 0 then redis.call('INCRBY', T .. ':fn', -p.taken) end
  if p.live then turns_put(T, p.cur, p.popped, p.pass) end
  return p.out, p.wait, p.unreached
end
-- fair_purge takes up to n messages for an operator emptying a backlog:
-- the placed tasks first, turn by turn, then the keys' lists, the
-- busiest keys first (fair_purge_lists).
local function fair_purge(T, n)
  local out = {}
  local cur, popped, pass, live = turns_get(T)
  if live then
    local gone = 0
    for _ = 1, 64 do
      local want = n - #out
      if want <= 0 then break end
      local list = T .. ':fo:' .. cur
      local got = redis.call('LRANGE', list, 0, want - 1)
      if #got > 0 then redis.call('LTRIM', list, #got, -1) end
      popped = popped + #got
      for _, v in ipairs(got) do
        if string.byte(v, 1) == 0 then -- a marker ('\0')
          turns_reached(T, string.sub(v, 2), cur)
        else
          out[#out + 1] = v
          gone = gone + 1
        end
      end
      if #got < want then
        pass = 0
        if redis.call('EXISTS', T .. ':fo:' .. (cur + 1)) == 1 then
          turns_clean(T, cur)
          cur, popped = cur + 1, 0
        else
          if not turns_clean(T, cur) and redis.call('EXISTS', T .. ':fe') == 0 then
            redis.call('DEL', T .. ':fi')
            live = false
          end
          break
        end
      end
    end
    if gone > 0 then redis.call('INCRBY', T .. ':fn', -gone) end
    if live then turns_put(T, cur, popped, pass) end
  end
  for _, m in ipairs(fair_purge_lists(T, n - #out)) do out[#out + 1] = m end
  return out
end
  turns = {get = turns_get, rec = turns_rec, waiting = turns_waiting, push = turns_push,
    place = turns_place, pause = turns_pause, resume = turns_resume, pop = fair_pop,
    purge = fair_purge}
  return turns
end
-- fair_route sends the messages with a group to their keys'
-- tasks, in order per key: into turns where they may go (turns_place), the
-- rest to their keys' lists, at the tail (at the head, for tasks given
-- back: left). It returns the others, in order, for the partition's
-- pending list. Declared in include/fair_take.lua, which uses it.
function fair_route(T, msgs, left, size)
  local plain, bykey, order = {}, {}, {}
  for _, m in ipairs(msgs) do
    -- the short head has no group: no call into msg_head
    local _, key = nil, ''
    if not msgpack_short_head(m) then _, key = msg_head(m) end
    if key == '' then
      plain[#plain + 1] = m
    else
      local l = bykey[key]
      if not l then
        l = {}
        bykey[key] = l
        order[#order + 1] = key
      end
      l[#l + 1] = m
    end
  end
  if #order == 0 then return plain end
  local t = turns_lib()
  if not left then t.place(T, order, bykey) end
  for _, key in ipairs(order) do
    if #bykey[key] > 0 then t.push(T, key, bykey[key], left, size) end
  end
  return plain
end
-- Fair queues: the ring (include/ring.lua), the turns tasks are placed
-- in (include/turns_lib.lua) and fair_route, which sends keyed tasks to
-- them. Scripts include this for all of it.
-- pending_store writes new tasks of partition T, whose shards hold size
-- items and whose feed keeps cap members: keyed holds the messages
-- pending now with a group, plain the others pending now and
-- at their positions among members (the feed's new members), copies {id,
-- message} of the tasks whose message the feed keeps. A keyless pending
-- task has no copy: readers find it in its shard through the feed rank and
-- T:feed:shards (include/pendingref.lua), written only when a push rolls
-- to a new shard. It records the feed's members and trims it. enqueue.lua
-- writes through it, and so does a workflow's release (include/wf_push.lua).
local function pending_store(T, size, cap, keyed, plain, at, members, copies)
  -- tasks with a key wait in their turns or their keys' lists
  -- (include/fair.lua)
  if #keyed > 0 then fair_route(T, keyed, false, size) end
  local rolls = {}
  if #plain > 0 then
    local _, r, empty = sharded_push(T .. ':first', T .. ':last', T .. ':s:', size, plain, false)
    -- the rolls count the pushed items: count feed positions instead
    for j = 1, #r, 2 do
      rolls[#rolls + 1] = at[r[j]] or (#members + 1)
      rolls[#rolls + 1] = r[j + 1]
    end
    if empty then
      -- into an empty shard: a blocked worker's move may take it into its
      -- in-flight list, out of every shard, until its claim; the copy
      -- covers that moment (the ack deletes it). Later items of the shard
      -- are only ever taken by an atomic pop or claim.
      copies[#copies + 1] = members[at[1]]
      copies[#copies + 1] = plain[1]
    end
  end
  local feed, copyk = T .. ':feed', T .. ':feed:msg'
  for j = 1, #copies, 1000 do
    redis.call('HSET', copyk, unpack(copies, j, math.min(#copies, j + 999)))
  end
  local first, trimmed = feed_append(feed, feed .. ':rank', members, cap)
  pending_index(T, first, rolls)
  -- copies of tasks that left the feed go with their entries
  pending_forget(T, feed, copyk, trimmed)
end
-- msg_keyed reports whether a message has a group: such a task
-- may be parked (T:k:<key>) away from the shards, so it keeps its copy.
local function msg_keyed(m)
  if msgpack_short_head(m) then return false end
  local _, key = msg_head(m)
  return key ~= ''
end
-- A partition's new pending tasks, written with their feed entries and
-- message copies: pending_store. msg_keyed comes with it: enqueue.lua and
-- enqueue_capped.lua tell keyed tasks by it through this file.
local T = ARGV[1]
local size, cap = tonumber(ARGV[3]), tonumber(ARGV[4])
local F, FIRST = tonumber(ARGV[5]), 6

-- a draining partition takes nothing new: the producer routes again
if rank_closed(redis.call('GET', KEYS[4])) then
  local codes = {}
  for _ = FIRST, #ARGV, F do codes[#codes + 1] = ENQ_CLOSED end
  return codes
end

if F == 2 then
  -- plain tasks: nothing to check, nothing scheduled; the common case
  -- skips the per-task options entirely. A task with a group
  -- keeps a copy: it waits in its key's list, away from the shards. One
  -- task onto a backlog: GET, RPUSH, INCRBY, ZADD.
  local codes, plain, members, copies, keyed, at = {}, {}, {}, {}, {}, {}
  for i = FIRST, #ARGV, 2 do
    codes[#codes + 1] = ENQ_PENDING
    members[#members + 1] = ARGV[i + 1]
    if not msgpack_short_head(ARGV[i]) and msg_keyed(ARGV[i]) then -- a plain head: one call, not two
      keyed[#keyed + 1] = ARGV[i]
      copies[#copies + 1] = ARGV[i + 1]
      copies[#copies + 1] = ARGV[i]
    else
      plain[#plain + 1] = ARGV[i]
      at[#at + 1] = #members -- its feed position, for the pending index
    end
  end
  pending_store(T, size, cap, keyed, plain, at, members, copies)
  return codes
end

-- now_ms returns arg as milliseconds when the caller supplied a time (tests
-- move the clock this way), otherwise the server's own clock, so a worker
-- with a skewed clock cannot decide leases or due times.
local function now_ms(arg)
  if arg and arg ~= '' and arg ~= '0' then
    return tonumber(arg)
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- The time a script runs at, in ms: the caller's when it gives one, else
-- the server's clock (now_ms).
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
-- record_new packs the record of a task that has not run yet: in state,
-- to be processed at next_at (ms).
local function record_new(state, next_at)
  return cmsgpack.pack({state, 0, 0, '', '', 0, 0, 0, next_at})
end
-- RECORD_DEFAULTS: fields [1] to [10] of a record that has none yet (see
-- include/record.lua).
local RECORD_DEFAULTS = {'pending', 0, 0, '', '', 0, 0, 0, 0, ''}

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
-- record_put stores the record table r of id.
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
-- unique_take takes the lock key for task id: for ttl ms when ttl > 0,
-- else until the task finishes and for -ttl - 1 ms after.
local function unique_take(T, key, id, ttl)
  local lock = T .. ':unique:' .. key
  if ttl > 0 then
    redis.call('SET', lock, id, 'PX', ttl)
    return
  end
  redis.call('SET', lock, id)
  if ttl < -1 then redis.call('HSET', T .. ':uafter', key, -ttl - 1) end
end
-- unique_release releases the lock key that task id holds, as the task
-- ends: how is 'done' (it succeeded), 'dead' or 'gone' (deleted or
-- purged). A lock another task holds now is left alone.
local function unique_release(T, key, id, how)
  if not key or key == '' then return end
  local lock = T .. ':unique:' .. key
  if redis.call('GET', lock) ~= id then return end
  if how ~= 'gone' and redis.call('PTTL', lock) >= 0 then
    -- a lock for a time: a success releases it, a dead task keeps it
    if how == 'done' then redis.call('DEL', lock) end
    return
  end
  local after = tonumber(redis.call('HGET', T .. ':uafter', key))
  if after then redis.call('HDEL', T .. ':uafter', key) end
  if how ~= 'gone' and after and after > 0 then
    redis.call('PEXPIRE', lock, after)
  else
    redis.call('DEL', lock)
  end
end
-- Uniqueness locks. T:unique:<key> holds the ID of the task that took
-- it, in one of two kinds:
--   for a time (queue.Unique, UniqueBy): it expires after its ttl, and
--     the task's success releases it earlier;
--   until the task finishes (queue.UniqueUntilFinished): no expiry while
--     the task waits or runs; when it finishes, done or dead, the lock
--     goes, or stays for the time T:uafter gives (key -> ms).
-- Deleting or purging the task releases either kind at once.
-- CLAIM_SHARDS: the hashes a bucket's claims are spread over.
local CLAIM_SHARDS = 1024

-- claim_shard spreads IDs evenly over the shards, whatever they share,
-- and returns the shard's digits: a number joined to a key name would be
-- formatted at every use.
local function claim_shard(id)
  return string.format('%d', tonumber(string.sub(redis.sha1hex(id), 1, 3), 16) % CLAIM_SHARDS)
end
-- claim_buckets returns, for claims of ttl ms at now, the key prefixes of
-- the buckets a claim made within ttl is in, the current one first, and
-- the current bucket's expiry (ms), once per call and ttl (cache).
local function claim_buckets(T, ttl, now, cache)
  local b = cache[ttl]
  if b then return b end
  local w = math.max(1, math.floor(ttl / 2))
  local bucket = math.floor(now / w)
  b = {expiry = string.format('%d', (bucket + 1) * w + ttl)}
  for k = 0, math.ceil(ttl / w) do
    b[k + 1] = string.format('%s:ids:%d:%d:', T, w, bucket - k)
  end
  cache[ttl] = b
  return b
end
-- claim_held reports whether id is claimed for ttl ms: in a bucket that
-- a claim made within ttl of now is in, or by the key of its own that
-- producers before 0.2 write (T:id:<id>). It returns the ID's shard too,
-- for claim_take.
local function claim_held(T, id, ttl, now, cache)
  local shard = claim_shard(id)
  if redis.call('EXISTS', T .. ':id:' .. id) == 1 then return true, shard end
  for _, prefix in ipairs(claim_buckets(T, ttl, now, cache)) do
    if redis.call('HEXISTS', prefix .. shard, id) == 1 then return true, shard end
  end
  return false, shard
end
-- claim_take claims id, of shard (claim_held), for ttl ms (to 1.5 ttl).
-- expiries records the bucket keys this call set an expiry on, so a
-- batch sets each once.
local function claim_take(T, id, shard, ttl, now, expiries, cache)
  local b = claim_buckets(T, ttl, now, cache)
  local key = b[1] .. shard
  redis.call('HSET', key, id, 1)
  if not expiries[key] then
    redis.call('PEXPIREAT', key, b.expiry)
    expiries[key] = true
  end
end
-- TaskID claims (queue.TaskID, Config.IDTTL). A claim is a field of a
-- hash per time bucket and shard, T:ids:<width>:<bucket>:<shard>, not a
-- key of its own: a small hash is a listpack, far smaller per field than
-- a key, and a slot moves a few thousand keys however many IDs it claims
-- (BENCHMARKS.md, "Measured design choices"). A bucket is half the
-- claim's ttl wide, and its key expires ttl after the bucket ends: a
-- claim lives between ttl and 1.5 ttl, and a check reads 3 buckets, each
-- one call, so a narrower bucket would cost every claimed enqueue a call
-- more. Producers that differ in IDTTL keep their claims apart.

local now = now_ms(ARGV[2])

-- checks: no writes yet
local codes, seen_id, seen_unique, shards = {}, {}, {}, {}
local buckets = {} -- claim bucket names per IDTTL, built once a call
for i = FIRST, #ARGV, F do
  local id, unique, claim = ARGV[i + 1], ARGV[i + 4], tonumber(ARGV[i + 6])
  local code, held = ENQ_PENDING, false
  if claim > 0 and not seen_id[id] then
    held, shards[#codes + 1] = claim_held(T, id, claim, now, buckets)
  end
  if claim > 0 and (seen_id[id] or held or redis.call('HEXISTS', KEYS[8], id) == 1) then
    code = ENQ_DUPLICATE_ID
  elseif unique ~= '' and (seen_unique[unique] or redis.call('EXISTS', T .. ':unique:' .. unique) == 1) then
    code = ENQ_DUPLICATE_UNIQUE
  end
  if code == ENQ_PENDING then
    if claim > 0 then seen_id[id] = true end
    if unique ~= '' then seen_unique[unique] = true end
  end
  codes[#codes + 1] = code
end

-- writes
local keyed, plain, at, members, copies, expiries = {}, {}, {}, {}, {}, {}
for i = FIRST, #ARGV, F do
  local k = (i - FIRST) / F + 1
  if codes[k] == ENQ_PENDING then
    local msg, id = ARGV[i], ARGV[i + 1]
    local due_at, delay = tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
    local unique, unique_ttl, claim = ARGV[i + 4], tonumber(ARGV[i + 5]), tonumber(ARGV[i + 6])
    local due = 0
    if due_at > 0 then due = due_at elseif delay > 0 then due = now + delay end
    members[#members + 1] = id
    if due > now then
      redis.call('ZADD', KEYS[6], due, id)
      redis.call('HSET', KEYS[7], id, msg)
      redis.call('HSET', KEYS[8], id, record_new('scheduled', due))
      codes[k] = ENQ_SCHEDULED
      copies[#copies + 1], copies[#copies + 2] = id, msg
    elseif not msgpack_short_head(msg) and msg_keyed(msg) then
      keyed[#keyed + 1] = msg
      copies[#copies + 1], copies[#copies + 2] = id, msg
    else
      plain[#plain + 1], at[#at + 1] = msg, #members
    end
    if claim > 0 then claim_take(T, id, shards[k], claim, now, expiries, buckets) end
    if unique ~= '' then unique_take(T, unique, id, unique_ttl) end
  end
end
pending_store(T, size, cap, keyed, plain, at, members, copies)
return codes
