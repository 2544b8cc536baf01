-- wf_effect is what parent state ps means to a child over edge e:
-- 'u' unfinished, 'f' fail, 'k' skip, '' satisfied.
local function wf_effect(ps, e)
  if ps == WF_STATE.waiting or ps == WF_STATE.enqueued then return WF_EFFECT.unfinished end
  if ps == WF_STATE.succeeded or e == WF_EDGE.run then return WF_EFFECT.satisfied end
  return e
end
