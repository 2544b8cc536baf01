-- wf_kids returns children list cs in its spaced form. A list recorded
-- in cmsgpack (its first byte 0x90 or above; a spaced one opens with a
-- letter) is turned into it. Reading the spaced form with find and sub
-- costs a quarter of what cmsgpack's tables cost.
local function wf_kids(cs)
  local b = byte(cs, 1)
  if not b or b < 0x80 then return cs end
  local out = {}
  for i, ch in ipairs(cmsgpack.unpack(cs)) do out[i] = ch[2] .. ch[1] end
  return table.concat(out, ' ')
end
