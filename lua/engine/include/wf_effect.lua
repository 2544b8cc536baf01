-- WF_EDGE: what a parent that did not succeed means to its child over
-- an edge; the letter is lower case in a children list, or upper case
-- when the parent is its child's only one.
local WF_EDGE = {fail = 'f', run = 'r', skip = 'k'}
-- WF_EFFECT: what a parent's state means to a child (wf_effect): a
-- fail or skip effect is its edge's letter.
local WF_EFFECT = {unfinished = 'u', fail = WF_EDGE.fail, skip = WF_EDGE.skip, satisfied = ''}
-- an edge's letter, in either case, and the edge it names
local EDGE = {f = 'f', r = 'r', k = 'k', F = 'f', R = 'r', K = 'k'}
-- wf_effect is what parent state ps means to a child over edge e:
-- 'u' unfinished, 'f' fail, 'k' skip, '' satisfied.
local function wf_effect(ps, e)
  if ps == WF_STATE.waiting or ps == WF_STATE.enqueued then return WF_EFFECT.unfinished end
  if ps == WF_STATE.succeeded or e == WF_EDGE.run then return WF_EFFECT.satisfied end
  return e
end
