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
