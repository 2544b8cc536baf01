-- turns_rec decodes a T:fa record: nil when there is none. lr is the last
-- turn holding a placed task of the key, fill how many it holds there, t
-- the list shard trickled tasks go to (-1: none), mk whether a marker
-- waits in turn lr, and pos each placed task's {turn, position}.
local function turns_rec(v)
  if not v then return nil end
  local lr, fill, t, mk, rest = string.match(v, '^(-?%d+) (%d+) (-?%d+) (%d)(.*)$')
  local pos = {}
  for r, p in string.gmatch(rest, ' (%d+):(%d+)') do pos[#pos + 1] = {tonumber(r), tonumber(p)} end
  return {lr = tonumber(lr), fill = tonumber(fill), t = tonumber(t), mk = mk == '1', pos = pos}
end
