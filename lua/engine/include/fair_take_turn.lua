--@include fair_layout
-- fair_take_turn plans the turn of the i-th key of the plan c, when want
-- tasks are still wanted, and returns how many it takes. A key that took
-- its last task, or reached a limit, gets its fate; one cut short by want
-- keeps the rest of its turn for the next call (c.head); any other waits
-- for its next turn, after the others'.
local function fair_take_turn(c, i, want)
  local k = c.ks[i]
  c.visited[i] = true
  local credit = k.weight
  if i == 1 and c.turn_key == k.key and c.turn_left > 0 and k.took == 0 then credit = c.turn_left end
  local t = math.min(credit, k.room - k.took, k.avail - k.took, want)
  k.took, want = k.took + t, want - t
  c.nt = c.nt + 1
  c.turns[c.nt], c.turnn[c.nt] = i, t
  if want == 0 and t < credit and k.avail > k.took and k.room > k.took then
    c.head = {i, credit - t} -- the rest of its turn comes first next time
  elseif k.avail <= k.took then
    k.fate = 'gone'
  elseif k.room <= k.took then
    if k.ratebound then
      k.fate, k.due = 'w', c.now + math.max(1, math.floor(c.lim.per / c.lim.keyrate)) -- waiting
    else
      k.fate = 'b' -- busy
    end
  else
    c.queue[#c.queue + 1] = i -- its next turn, after the others'
  end
  return t
end
