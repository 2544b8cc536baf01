--@include fair_layout
--@include fair_wake
--@include turns_get
--@include turns_put
--@include turns_base
--@include turns_call
--@include turns_place_key
--@include turns_place_write
-- turns_place places the tasks of the keys in order (key -> its messages
-- in bykey) that may go straight into turns: keys with no list, not
-- paused, not trickling, in a partition with no key limits. Each key
-- fills the turns from its last one (the turn now for a new key), up to
-- its weight per turn and TURNS_AHEAD turns ahead; the rest of its tasks
-- stay in bykey for its list (turns_push), behind its marker. One push
-- per turn for the batch, and one write per structure.
local function turns_place(T, order, bykey)
  if redis.call('EXISTS', T .. ':limits') == 1 then
    local l = redis.call('HMGET', T .. ':limits', 'keyconc', 'keyrate')
    if (tonumber(l[1]) or 0) > 0 or (tonumber(l[2]) or 0) > 0 then return end
  end
  local cur, popped, pass, live = turns_get(T)
  local base = turns_base(cur, pass)
  local lists = turns_call('HMGET', T .. ':fk', order)
  local recs = turns_call('HMGET', T .. ':fa', order)
  local paused = redis.call('EXISTS', T .. ':fp') == 1 and turns_call('SMISMEMBER', T .. ':fp', order) or {}
  local held = redis.call('EXISTS', T .. ':fx') == 1 and turns_call('HMGET', T .. ':fx', order) or {}
  local weights = redis.call('EXISTS', T .. ':fw') == 1 and turns_call('HMGET', T .. ':fw', order) or {}
  local p = {turns = {}, torder = {}, placed = {}, total = 0}
  for j, key in ipairs(order) do
    if not lists[j] and paused[j] ~= 1 and not held[j] then
      local w = weights[j] and math.max(1, tonumber(weights[j]) or 1) or 1
      turns_place_key(p, key, bykey, recs[j], w, base)
    end
  end
  if #p.torder == 0 then return end
  if not live then
    cur, popped, pass = 0, 0, 0
    turns_put(T, 0, 0, 0)
  end
  local was = redis.call('EXISTS', T .. ':fo:' .. cur, T .. ':fo:' .. (cur + 1))
  turns_place_write(T, p, cur, popped)
  if was == 0 then fair_wake(T) end
end
