--@include fair_layout
--@include msg_head
--@include turns_call
-- turns_pop_keys returns, for the items got from the turn's list in the
-- pop p, the key of each task (keyof[i]) and the keys that trickle
-- (hold[key]: in T:fx), when any task may have to go to its key's list;
-- else both empty.
local function turns_pop_keys(p, got)
  local keyof, hold = {}, {}
  if not (p.trickle_all or p.fx) or #got == 0 then return keyof, hold end
  local ks = {}
  for i, v in ipairs(got) do
    if string.byte(v, 1) ~= 0 then -- not a marker ('\0')
      local _, key = msg_head(v)
      keyof[i] = key
      ks[#ks + 1] = key
    end
  end
  if p.fx and #ks > 0 then
    for j, h in ipairs(turns_call('HMGET', p.T .. ':fx', ks)) do
      if h then hold[ks[j]] = true end
    end
  end
  return keyof, hold
end
