-- wf_parse reads a node's stored state, in field key, into its entry:
-- {state, unfinished, fail, skip, children (nil: not read, false: none),
-- key, dirty}, all in the array part, which the constructor sizes. A
-- number is a waiting node's unfinished parents, the common case, read
-- without a pattern.
local function wf_parse(v, key)
  -- a letter alone: enqueued or finished, what an ack reads
  if #v == 1 and v >= 'a' then return {v, 0, 0, 0, nil, key, nil} end
  local u = NUM[v]
  if not u then
    u = tonumber(v)
    if u then NUM[v] = u end
  end
  if u then return {WF_STATE.waiting, u, 0, 0, nil, key, nil} end
  local st, uu, f, k = string.match(v, '^(%a) (%d+) (%d+) (%d+)$')
  if st then return {st, tonumber(uu), tonumber(f), tonumber(k), nil, key, nil} end
  return {v, 0, 0, 0, nil, key, nil}
end
