-- wf_stored is what wf_flush writes for node entry n.
local function wf_stored(n)
  local st = n[1]
  if st == WF_STATE.waiting and n[3] == 0 and n[4] == 0 then
    local u = n[2]
    local v = STR[u]
    if not v then
      v = string.format('%d', u)
      STR[u] = v
    end
    return v
  end
  if WAITS[st] then return string.format('%s %d %d %d', st, n[2], n[3], n[4]) end
  return st
end
