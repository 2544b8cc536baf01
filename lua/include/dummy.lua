-- DUMMY is the single item a blocking-pop helper pushes to wake a blocked
-- reader at once. Its first byte 0xc1 never begins valid msgpack, so no reader
-- can mistake it for a message; every path that reads a shard or an in-flight
-- list drops it. Keep in step with Dummy in internal/script and dummy in lua/sharded.go.
local DUMMY = '\193shardq:dummy'
