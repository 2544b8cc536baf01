// Package scriptsrc hands the engine the Lua tree that package lua embeds.
//
// The files must be embedded from lua/, where they live, but the engine's
// access to them is not part of lua's public API, which holds only the four
// primitives. So lua sets FS in its init, and internal/script, which
// imports lua, reads it: package initialization order makes FS set before
// any importer of lua runs.
package scriptsrc

import "io/fs"

// FS holds every Lua script of shardq (lua/*.lua, lua/include/*.lua and
// the same two under lua/engine/), set by package lua's init.
var FS fs.FS
