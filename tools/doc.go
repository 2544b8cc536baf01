// Module tools pins the developer tools shardq's Makefile runs, apart
// from the library's own go.mod: make check builds staticcheck from here.
package tools
