#!lua flags=no-writes,allow-oom
--[[ list_zset: a page of one of a queue partition's sorted sets (T:active,
  T:scheduled, T:retry by time; T:feed, T:done, T:dead by rank) after a
  marker, with each task's message and record.
  KEYS[1] the set  KEYS[2] T:msg  KEYS[3] T:state  KEYS[4] T:feed:msg
  ARGV[1] marker score ("" = from the start)  ARGV[2] marker member
  ARGV[3] limit  ARGV[4] order: "asc" (lowest score first) or "desc"
  The marker is the last entry of the previous page: (score, member). It
  need not be in the set any more (run, deleted, its lease extended): the
  page starts at the first entry that orders after it, found by rank in
  O(log(n)^2), so a page costs the same whatever the set's size.
  Returns: {id, score, message or "", record or "", ...} ]]
--@include zpos
--@include taskview
local key, limit, desc = KEYS[1], tonumber(ARGV[3]), ARGV[4] == 'desc'
local from, to
if ARGV[1] == '' then
  if desc then
    to = redis.call('ZCARD', key) - 1
  else
    from = 0
  end
else
  local pos, found = zset_position(key, tonumber(ARGV[1]), ARGV[2])
  if desc then
    to = pos - 1
  elseif found then
    from = pos + 1
  else
    from = pos
  end
end
if desc then
  from = math.max(0, to - limit + 1)
else
  to = from + limit - 1
end
if to < from then return {} end
local page = redis.call('ZRANGE', key, from, to, 'WITHSCORES')
local first, last, step = 1, #page - 1, 2
if desc then first, last, step = #page - 1, 1, -2 end
local ids, scores = {}, {}
for i = first, last, step do
  ids[#ids + 1] = page[i]
  scores[#scores + 1] = page[i + 1]
end
return task_views(ids, scores, KEYS[2], KEYS[3], KEYS[4])
