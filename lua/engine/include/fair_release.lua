--@include fair_layout
--@include fair_get
--@include fair_back
-- fair_release is key_release's part: a key that was at its
-- GroupConcurrency has a slot again, so it takes its place in the ring.
local function fair_release(T, key)
  local first, last, state = fair_get(T, key)
  if state == 'b' then fair_back(T, key, first, last) end -- busy
end
