--@include wf_effect
-- wf_count adds d to the counter of effect ef of node entry n.
local function wf_count(n, ef, d)
  if ef == WF_EFFECT.unfinished then n[2] = n[2] + d elseif ef == WF_EFFECT.fail then n[3] = n[3] + d elseif ef == WF_EFFECT.skip then n[4] = n[4] + d end
end
