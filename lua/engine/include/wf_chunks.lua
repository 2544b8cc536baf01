-- wf_chunks calls cmd on key with args, at most step of them per call.
local function wf_chunks(cmd, key, args, step)
  for i = 1, #args, step do
    redis.call(cmd, key, unpack(args, i, math.min(i + step - 1, #args)))
  end
end
