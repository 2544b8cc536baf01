--@include ack_keep
--@include ack_wf
--@include ack_note
-- ack_task records in the call a (ack_tasks) the task id it acks, whose
-- record is r (raw as stored) and whose arguments start at argv[i]: its
-- ID in a.done, its group's count in a.released (group -> tasks acked,
-- made with the first), its record kept (ack_keep) or gone, its workflow
-- node (ack_node) or flow note (ack_note), and its unique lock in
-- a.uniques (unique key, task ID: a.nu values).
local function ack_task(a, id, r, raw, i)
  local argv, width = a.argv, a.width
  local nd = a.nd + 1
  a.nd = nd
  a.done[nd] = id
  if r[10] and r[10] ~= '' then
    local released = a.released or {}
    a.released = released
    released[r[10]] = (released[r[10]] or 0) + 1
  end
  local retention = width >= 4 and tonumber(argv[i + 2]) or 0
  if retention > 0 then
    ack_keep(a, id, raw, retention)
  elseif a.gone then
    a.gone[#a.gone + 1] = id
  end
  -- a workflow node whose workflow this script may write to
  local W, x = a.wkey, nil
  if width == 3 then x = argv[i + 2] elseif width == 7 then W, x = argv[i + 5], argv[i + 6] end
  if W ~= '' then
    ack_wf().node(a, W, x, id)
  elseif width >= 5 and argv[i + 4] ~= '' then
    ack_note(a, argv[i + 4], id)
  end
  local unique = width >= 4 and argv[i + 3] or ''
  if unique ~= '' then
    local nu = a.nu
    a.uniques[nu + 1], a.uniques[nu + 2] = unique, id
    a.nu = nu + 2
  end
end
