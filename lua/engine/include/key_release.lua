--@include keys_release
-- key_release: a task of key stopped running (keys_release of one).
local function key_release(T, key, size)
  if key == nil or key == '' then return end
  keys_release(T, {[key] = 1}, size)
end
