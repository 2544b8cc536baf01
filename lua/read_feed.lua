#!lua flags=no-writes,allow-oom
--[[ read_feed: a page of one of a queue partition's ranked feeds (all recent
  tasks, done, dead) after a marker, with each task's message and record.
  KEYS[1] the feed  KEYS[2] T:msg  KEYS[3] T:state  KEYS[4] T:feed:msg
  ARGV[1] marker task ID ("" = from the start)  ARGV[2] limit
  ARGV[3] order: "asc" (oldest first) or "desc" (newest first)
  Returns: {id, rank, message or "", record or "", ...}; -1 when the marker is
  not in the feed ]]
--@include feed
--@include taskview
local page = feed_page(KEYS[1], ARGV[1], tonumber(ARGV[2]), ARGV[3] == 'desc')
if page == nil then return -1 end
local ids, ranks = {}, {}
for i = 1, #page, 2 do
  ids[#ids + 1] = page[i]
  ranks[#ranks + 1] = page[i + 1]
end
return task_views(ids, ranks, KEYS[2], KEYS[3], KEYS[4])
