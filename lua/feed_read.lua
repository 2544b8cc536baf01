#!lua flags=no-writes,allow-oom
--[[ feed_read: the page of a ranked feed after a marker.
  KEYS[1] the feed
  ARGV[1] marker member ("" = from the start)  ARGV[2] limit
  ARGV[3] order: "asc" (oldest first) or "desc" (newest first)
  Returns: {member, rank, member, rank, ...}; MARKER_NOT_FOUND
  (include/codes.lua) when the marker is not in the feed ]]
--@include codes
--@include feed
local page = feed_page(KEYS[1], ARGV[1], tonumber(ARGV[2]), ARGV[3] == 'desc')
if page == nil then return MARKER_NOT_FOUND end
return page
