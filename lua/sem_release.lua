#!lua flags=allow-oom
--[[ sem_release: give a slot back.
  KEYS[1] the holders (zset holder -> expiry ms)
  ARGV[1] holder
  Returns: 1 released, 0 not held ]]
return redis.call('ZREM', KEYS[1], ARGV[1])
