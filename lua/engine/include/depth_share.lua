-- depth_share returns partition part's share of max over parts partitions:
-- the shares add up to max exactly.
local function depth_share(max, part, parts)
  if parts <= 1 then return max end
  local share = math.floor(max / parts)
  if part < max % parts then share = share + 1 end
  return share
end
