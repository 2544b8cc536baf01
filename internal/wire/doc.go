// Package wire is the format of what shardq stores in Redis: task messages
// (immutable, msgpack, the very bytes a pending list holds), task records
// (mutable, written by the Lua scripts) and task IDs.
package wire
