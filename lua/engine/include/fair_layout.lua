-- The fair queues' keys and a key's states, named. A task with a
-- group does not wait in its partition's pending list: it is
-- placed in the list of its turn (turns_place), or waits in a list of its
-- key, whose keys take their turns from the ring (fair_take), so a key
-- with a long backlog delays the others by one turn, not by its backlog.
-- Each key below is T (the partition's prefix) followed by its suffix; the
-- suffixes are the wire format of every partition written so far.
--
-- A key with no task waiting leaves every structure but T:fw and T:fp,
-- which hold what an operator set. Every step costs the same whatever a
-- key's backlog and however many keys there are: a key is reached by its
-- turn, and one that may not start (paused, at its limits) leaves the ring
-- at its turn and comes back when that changes, so no turn walks it again.
--
-- Turns are kept in order: every key's placed tasks fill consecutive
-- turns from the one now, so turn r+1 holds tasks only if turn r does, but
-- for the turn now. A key with more than TURNS_AHEAD turns of tasks, a
-- paused key and every key of a limited partition keep the rest in their
-- list, behind a marker in the turn of their last placed task: when it is
-- reached, the key joins the ring, whose keys take one turn each after the
-- turn's list. A key's tasks waiting are its list's (T:fz) and its placed
-- tasks whose position is past what was taken of their turn: counted
-- exactly, with no write per take.
local FAIR = {
  -- T:fr list: the ring, the keys whose tasks may start, in turn order.
  -- The head's turn is now. The member "" stands for the partition's
  -- pending list, the tasks with no key.
  ring = ':fr',
  -- T:ft string "<credit> <key>": what is left of the head key's turn;
  -- absent, or naming another key: a whole turn.
  turn = ':ft',
  -- T:fk hash: key -> "first last state" for each key with a list: its
  -- tasks wait in the shards T:fq:<key>:<first..last>, as a sharded list
  -- does; state is one of FAIR_STATE.
  lists = ':fk',
  -- T:fq:<key>:<n> list: shard n of key's list.
  shard = ':fq:',
  -- T:fz zset: key -> the tasks in its list, for each key with one (a key
  -- with placed tasks only: its placed count, for the order of Keys).
  sizes = ':fz',
  -- T:fl zset: the same keys, all scored 0: in the order of their names,
  -- for readers that page through every key's tasks.
  names = ':fl',
  -- T:fn string: the tasks waiting in every key's shards and turns.
  count = ':fn',
  -- T:fw hash: key -> its weight, for keys an operator weighted; a turn
  -- takes up to weight tasks. Others weigh 1.
  weights = ':fw',
  -- T:fp set: the keys an operator paused, with tasks or not.
  paused = ':fp',
  -- T:fd zset: key -> when its GroupRate lets it start one more (state
  -- waiting).
  due = ':fd',
  -- T:fs string: present while "" is in the ring.
  plain = ':fs',
  -- T:fh string: the tasks held: waiting in the shards of keys out of the
  -- ring (states busy, paused, waiting), which QueueInfo counts as
  -- Waiting, not Pending.
  held = ':fh',
  -- T:kr:<key> zset: the starts of key within its GroupRate's window.
  rate_log = ':kr:',
  -- T:fo:<r> list: turn r's placed tasks, in start order, and markers
  -- (mark .. key: every placed task of key was reached).
  turn_list = ':fo:',
  -- T:fi string "cur popped pass": the turn now; how many items left its
  -- list's head; and, once that list is done, how many ring turns are
  -- left in this turn (0: the list's part). Absent while no task is
  -- placed.
  turn_now = ':fi',
  -- T:fa hash: key -> "lr fill trickle marked r:p ...", for keys with
  -- placed tasks: the last turn holding one, how many it holds, the list
  -- shard trickled tasks go to (-1: none), whether a marker waits in turn
  -- lr, and each placed task's turn and position in it.
  placed = ':fa',
  -- T:fe zset: key -> lr, the same keys: the turn after which their
  -- records go.
  ends = ':fe',
  -- T:fx hash: key -> 1: keys whose placed tasks go to their list as they
  -- are reached (paused, or limited since), so no task of a key overtakes
  -- an older one.
  trickle = ':fx',
  -- a marker's first byte, never the first byte of a message (a msgpack
  -- array's): the rest is its key
  mark = '\0',
}

-- FAIR_STATE: the state of a key with a list, the last letter of its T:fk
-- record.
local FAIR_STATE = {
  ring = 'r', -- in the ring
  marked = 'm', -- behind its placed tasks: its marker brings it in
  busy = 'b', -- at its GroupConcurrency
  paused = 'p', -- paused by an operator
  waiting = 'w', -- waiting for its GroupRate (T:fd)
}
