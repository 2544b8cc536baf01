#!lua
--[[ feed_append: append members to a ranked feed with a contiguous run of
  ranks and trim it to its newest cap members.
  KEYS[1] the feed (zset member -> rank)  KEYS[2] its rank counter
  ARGV[1] cap (0 = unbounded)  ARGV[2..] members
  Returns: {first rank given, trimmed member, ...} ]]
--@include feed
local members = {}
for i = 2, #ARGV do members[#members + 1] = ARGV[i] end
local first, trimmed = feed_append(KEYS[1], KEYS[2], members, tonumber(ARGV[1]))
local out = {first}
for _, m in ipairs(trimmed) do out[#out + 1] = m end
return out
