#!lua flags=no-writes,allow-oom
--[[ list_pending: a page of a queue partition's pending tasks after a
  marker: its pending list, head (next to run) first, then the tasks
  placed in turns, the turn now first, then the tasks waiting in their
  keys' lists (include/fair.lua), key by key in the order of the keys'
  names, each key's head first.
  KEYS[1] T:first  KEYS[2] T:last  KEYS[3] T:state
  ARGV[1] T:s:  ARGV[2] marker shard ("" = from the head)  ARGV[3] marker index
  ARGV[4] marker task ID  ARGV[5] limit  ARGV[6] marker key ("" = the
  pending list's part, "\0" = the turns' part, whose shard is the turn;
  absent in calls of older builds)
  The marker is where the previous page ended: the key (or the pending
  list), the shard and index its last message was read at, and that
  message's ID. Appends at the tail move nothing before it; pops at the
  head move it left and requeues at the head move it right, so it is
  looked up by ID within its shard (bounded by the shard size). When it is
  gone it was popped, with everything before it, and the page starts at
  the head of that list. Dummies are skipped.
  Returns: {shard, index, id, message, record or "", key or "", ...}; a
  pending task has a record only when it ran before (attempts, last
  error) ]]
--@include sharded
--@include msg_head
--@include fair
local prefix, limit = ARGV[1], tonumber(ARGV[5])
local TURNS = '\0' -- the marker's key for the tasks placed in turns
local T = string.sub(prefix, 1, -4) -- T:s: less ':s:'
local mkey = ARGV[6] or ''
-- pending tasks deleted by ID wait in T:tomb until a dequeue drops them:
-- not listed meanwhile
local tomb = T .. ':tomb'
if redis.call('EXISTS', tomb) == 0 then tomb = nil end
local out = {}
local n = 0

-- start returns where a list of shards first..last resumes after the
-- marker (shard ms, index mi, ID mid): the shard and index after it.
local function start(lp, first, last, ms, mi, mid)
  if ms == nil or ms < first or ms > last then return first, 0 end
  local items = redis.call('LRANGE', lp .. ms, 0, -1)
  -- nearest the old index first: pops move it left, requeues right
  for k = math.min(mi + 1, #items), 1, -1 do
    if items[k] ~= DUMMY and msg_head(items[k]) == mid then return ms, k end
  end
  for k = mi + 2, #items do
    if items[k] ~= DUMMY and msg_head(items[k]) == mid then return ms, k end
  end
  if ms > first then return ms, 0 end
  return first, 0
end

-- list adds the tasks of shards shard..last of lp, from index on, until
-- the page is full.
local function list(lp, shard, index, last, key)
  local visits = 0
  while n < limit and shard <= last and visits <= limit + 2 do
    visits = visits + 1
    local want = limit - n
    local got = redis.call('LRANGE', lp .. shard, index, index + want - 1)
    for k, v in ipairs(got) do
      -- a turn's list holds markers too, which are no task
      if v ~= DUMMY and string.byte(v, 1) ~= 0 and not (tomb and redis.call('SISMEMBER', tomb, (msg_head(v))) == 1) then
        local id = msg_head(v)
        out[#out + 1] = shard
        out[#out + 1] = index + k - 1
        out[#out + 1] = id
        out[#out + 1] = v
        out[#out + 1] = redis.call('HGET', KEYS[3], id) or ''
        out[#out + 1] = key
        n = n + 1
      end
    end
    if #got < want then
      shard, index = shard + 1, 0
    else
      index = index + #got
    end
  end
end

local ms, mi, mid = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
if mkey == '' then
  local first, last = shard_bounds(KEYS[1], KEYS[2])
  local shard, index = start(prefix, first, last, ms, mi, mid)
  list(prefix, shard, index, last, '')
  ms = nil
end
-- then the tasks placed in turns, turn by turn (include/fair.lua): the
-- turns are consecutive from the one now
if mkey == '' or mkey == TURNS then
  local cur, _, _, live = turns_lib().get(T)
  if live then
    local last = cur
    while redis.call('EXISTS', T .. ':fo:' .. (last + 1)) == 1 do last = last + 1 end
    local shard, index = start(T .. ':fo:', cur, last, ms, mi, mid)
    list(T .. ':fo:', shard, index, last, TURNS)
  end
  ms = nil
end
-- then the keys' lists, from the marker's key on
local from = '-'
if mkey ~= '' and mkey ~= TURNS then
  local first, last = fair_get(T, mkey)
  if first then
    local lp = T .. ':fq:' .. mkey .. ':'
    local shard, index = start(lp, first, last, ms, mi, mid)
    list(lp, shard, index, last, mkey)
  end
  from = '(' .. mkey
end
while n < limit do
  local ks = redis.call('ZRANGE', T .. ':fl', from, '+', 'BYLEX', 'LIMIT', 0, 16)
  if #ks == 0 then break end
  for _, key in ipairs(ks) do
    if n >= limit then break end
    local first, last = fair_get(T, key)
    if first then list(T .. ':fq:' .. key .. ':', first, 0, last, key) end
  end
  from = '(' .. ks[#ks]
end
return out
