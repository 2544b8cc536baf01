--@include sharded_push
--@include feed_append
--@include pending_index
--@include pending_forget
--@include fair
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
