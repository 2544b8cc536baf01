--@include codes
--@include msg_head
--@include sharded
--@include fair_layout
--@include fair_get
--@include fair_set
--@include fair_wake
--@include fair_enter
--@include fair_held
--@include fair_shards_push
--@include fair_push
--@include fair_plain
--@include fair_take
--@include fair_purge_lists
-- Turns (T:fo:<r> and the keys after it in fair_layout). A key whose
-- backlog is short, in a partition with no key limits, needs no list of
-- its own: enqueue places each of its tasks straight in the list of the
-- turn it will start in, up to its weight per turn, so a pop takes a run
-- of tasks from one list, as from a plain queue, and touches no key.

-- turns holds the turns' helpers, made by the first call that needs them
-- (turns_lib): every helper defined is a closure made per script call,
-- so a call that touches no keyed task, such as a plain pop, makes none.
-- Their files are included inside turns_lib for that; each one's includes
-- of the ring's functions above are inlined here, at the top, first.
local turns

local function turns_lib()
  if turns then return turns end
  --@include turns_get
  --@include turns_rec
  --@include turns_waiting
  --@include turns_push
  --@include turns_place
  --@include turns_pause
  --@include turns_resume
  --@include fair_pop
  --@include fair_purge
  turns = {get = turns_get, rec = turns_rec, waiting = turns_waiting, push = turns_push,
    place = turns_place, pause = turns_pause, resume = turns_resume, pop = fair_pop,
    purge = fair_purge}
  return turns
end
