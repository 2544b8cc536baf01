--@include workflow
--@include batch_apply
--@include chain_apply
-- A flow home H ({<prefix>:flows:<n>}) keeps its workflows (a chain or a
-- batch among them; and the batches and chains 0.1.0 wrote, in their own
-- records: include/batch_apply.lua, include/chain_apply.lua) and an
-- outbox of tasks to deliver (H:out, H:outmsg). Each flow task's outcome
-- that no ack applied at its home arrives here as a notification (see
-- home_notify.lua) and is applied as a change of that task's state,
-- never as a count, so the same notification applied twice changes
-- nothing. Released nodes go into the outbox in the same script that
-- decides they are due, with their new state: they are decided once.
-- home_apply applies one notification {ref, member, outcome, result,
-- error} (wire.FlowNote) at home H. A ref that does not parse is dropped.
-- A workflow's outcomes go into its run in runs (wid -> run), which the
-- caller finishes once for all of them (include/wf_finish.lua).
local function home_apply(H, note, now, runs)
  local ok, n = pcall(cmsgpack.unpack, note)
  if not ok or type(n) ~= 'table' or type(n[1]) ~= 'string' then return false end
  local kind, rest = string.match(n[1], '^([bcw])%d+:(.+)$')
  if kind == 'b' then return batch_apply(H, rest, n[2], n[3], now) end
  if kind == 'w' then
    local wid, x = string.match(rest, '^([^:]+):(.+)$')
    if wid then
      local r = runs[wid]
      if not r then
        r = wf_lib().start(H, H .. ':w:' .. wid, now)
        runs[wid] = r
      end
      return wf_lib().note(r, x, n[2], n[3], n[4], n[5] or '')
    end
    return false
  end
  if kind == 'c' then
    local cid, k = string.match(rest, '^(.+):(%d+)$')
    if cid then return chain_apply(H, cid, tonumber(k), n[3], n[4], n[5] or '', now) end
  end
  return false
end
