--@include wf_join_add
--@include wf_stored_kids
-- wf_extend_write writes an extension's checked nodes into run r's
-- workflow W: their routes and tasks, the counts, each child's counters
-- from its new parents' states, and the parents' children lists (the
-- stored list, then the new children); the join nodes (join, false for
-- none) wait for every new node too. The new nodes join r's work.
local function wf_extend_write(W, r, nodes, new, adds, edges, before, stored, join)
  local wf = wf_lib()
  redis.call('HINCRBY', W, 'n', #nodes)
  -- an existing node has a new parent: an upper-case edge into it may lie
  if before then redis.call('HSET', W, 'ext', 1) end
  redis.call('HINCRBY', W, 'edges', edges)
  r.open = #nodes
  r.counts.w = #nodes
  local kv = {}
  for _, nd in ipairs(nodes) do
    kv[#kv + 1], kv[#kv + 2] = 'm:' .. nd.name, nd.meta
    kv[#kv + 1], kv[#kv + 2] = 'e:' .. nd.name, nd.e
    r.nodes[nd.name] = wf.parse('0')
  end
  wf.chunks('HSET', W, kv, 1000)
  if join then wf_join_add(r, join, #nodes) end
  kv = {}
  for p, list in pairs(adds) do
    local ps = wf.node(r, p)[1]
    for _, ch in ipairs(list) do
      wf.count(wf.node(r, ch[1]), wf.effect(ps, ch[2]), 1)
      wf.dirty(r, ch[1])
    end
    local all = {}
    local cs = not new[p] and wf_stored_kids(W, p, stored)
    if cs then all[1] = cs end
    for _, ch in ipairs(list) do all[#all + 1] = ch[3] .. ch[1] end
    local packed = table.concat(all, ' ')
    kv[#kv + 1], kv[#kv + 2] = 'c:' .. p, packed
    r.nodes[p][5] = packed
  end
  wf.chunks('HSET', W, kv, 1000)
  for _, nd in ipairs(nodes) do
    local n = r.nodes[nd.name]
    if n[5] == nil then n[5] = false end -- no children yet, none to read
    wf.dirty(r, nd.name)
    r.work[#r.work + 1] = nd.name
  end
end
