-- record_pack_active packs the record table r of a task being leased,
-- padded (an 11th field of spaces) to more than 64 bytes:
-- hash-max-listpack-value's default, past which Redis makes T:state a
-- hash table, and keeps it one (it never converts back, and a hash created
-- by a long value starts as one). As a listpack, T:state's every lookup is
-- a scan, and a lease and its ack look up a task's record four times: with
-- a worker leasing ahead of its slots (prefetch), T:state holds about a
-- hundred leases, and the scans were a tenth of Redis's CPU per processed
-- task. The padding costs an active task a few dozen bytes.
local function record_pack_active(r)
  local rec = cmsgpack.pack(r)
  if #rec > 64 then return rec end
  r[11] = (r[11] or '') .. string.rep(' ', 65 - #rec)
  return cmsgpack.pack(r)
end
