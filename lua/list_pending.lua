#!lua flags=no-writes,allow-oom
--[[ list_pending: a page of a queue partition's pending list, head (next to
  run) first, after a marker.
  KEYS[1] T:first  KEYS[2] T:last  KEYS[3] T:state
  ARGV[1] T:s:  ARGV[2] marker shard ("" = from the head)  ARGV[3] marker index
  ARGV[4] marker task ID  ARGV[5] limit
  The marker is where the previous page ended: the shard and index its last
  message was read at, and that message's ID. Appends at the tail move
  nothing before it; pops at the head move it left and requeues at the head
  move it right, so it is looked up by ID within its shard (bounded by the
  shard size). When it is gone it was popped, with everything before it,
  and the page starts at the head. Dummies are skipped.
  Returns: {shard, index, id, message, record or "", ...}; a pending task
  has a record only when it ran before (attempts, last error) ]]
--@include sharded
--@include msgid
local prefix, limit = ARGV[1], tonumber(ARGV[5])
-- pending tasks deleted by ID wait in T:tomb until a dequeue drops them:
-- not listed meanwhile
local tomb = string.sub(prefix, 1, -4) .. ':tomb'
if redis.call('EXISTS', tomb) == 0 then tomb = nil end
local first, last = shard_bounds(KEYS[1], KEYS[2])
local shard, index = first, 0
if ARGV[2] ~= '' then
  local ms, mi, mid = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
  if ms >= first and ms <= last then
    local items = redis.call('LRANGE', prefix .. ms, 0, -1)
    local at = nil
    -- nearest the old index first: pops move it left, requeues right
    for k = math.min(mi + 1, #items), 1, -1 do
      if items[k] ~= DUMMY and msg_head(items[k]) == mid then at = k break end
    end
    if not at then
      for k = mi + 2, #items do
        if items[k] ~= DUMMY and msg_head(items[k]) == mid then at = k break end
      end
    end
    if at then
      shard, index = ms, at
    elseif ms > first then
      shard, index = ms, 0
    end
  end
end
local out = {}
local visits = 0
local n = 0
while n < limit and shard <= last and visits <= limit + 2 do
  visits = visits + 1
  local want = limit - n
  local got = redis.call('LRANGE', prefix .. shard, index, index + want - 1)
  for k, v in ipairs(got) do
    if v ~= DUMMY and not (tomb and redis.call('SISMEMBER', tomb, (msg_head(v))) == 1) then
      local id = msg_head(v)
      out[#out + 1] = shard
      out[#out + 1] = index + k - 1
      out[#out + 1] = id
      out[#out + 1] = v
      out[#out + 1] = redis.call('HGET', KEYS[3], id) or ''
      n = n + 1
    end
  end
  if #got < want then
    shard, index = shard + 1, 0
  else
    index = index + #got
  end
end
return out
