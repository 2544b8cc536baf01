--@include msgpack_short_head
--@include msg_head
--@include fair_take
--@include turns_lib
-- fair_route sends the messages with a group to their keys'
-- tasks, in order per key: into turns where they may go (turns_place), the
-- rest to their keys' lists, at the tail (at the head, for tasks given
-- back: left). It returns the others, in order, for the partition's
-- pending list. Declared in include/fair_take.lua, which uses it.
function fair_route(T, msgs, left, size)
  local plain, bykey, order = {}, {}, {}
  for _, m in ipairs(msgs) do
    -- the short head has no group: no call into msg_head
    local _, key = nil, ''
    if not msgpack_short_head(m) then _, key = msg_head(m) end
    if key == '' then
      plain[#plain + 1] = m
    else
      local l = bykey[key]
      if not l then
        l = {}
        bykey[key] = l
        order[#order + 1] = key
      end
      l[#l + 1] = m
    end
  end
  if #order == 0 then return plain end
  local t = turns_lib()
  if not left then t.place(T, order, bykey) end
  for _, key in ipairs(order) do
    if #bykey[key] > 0 then t.push(T, key, bykey[key], left, size) end
  end
  return plain
end
