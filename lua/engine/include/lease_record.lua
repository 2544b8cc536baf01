--@include record_pack_active
--@include record_decode
--@include keydepth_down
-- lease_record returns, for a task lease_tasks leases to worker at now,
-- its active record, its attempt, its token and the attempts operators
-- granted it (nil: none). raw is its stored record (false: none), key
-- the group its lease counts against ('' for none), group its own. A
-- first lease of a task that GroupMaxDepth does not count (depth_counted:
-- the partition counts some) gets fresh[key], packed once per batch; a
-- counted task's first start counts it out.
local function lease_record(T, raw, key, group, depth_counted, fresh, worker, now)
  if not raw and not (depth_counted and group ~= '') then
    fresh[key] = fresh[key] or record_pack_active({'active', 1, 1, worker, '', 0, now, 0, 0, key})
    return fresh[key], 1, 1, nil
  end
  local r = record_decode(raw)
  if r[2] == 0 and depth_counted then keydepth_down(T, group, 1) end -- its first start
  r[1], r[2], r[3], r[4], r[7], r[9], r[10] = 'active', r[2] + 1, r[3] + 1, worker, now, 0, key
  return record_pack_active(r), r[2], r[3], r[12]
end
