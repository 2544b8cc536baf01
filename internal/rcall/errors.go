package rcall

import (
	"errors"
	"strings"
)

// Errors of Resolve, which a test of the embedded scripts would meet first.
var (
	// ErrMissingInclude reports an include directive naming a file that does not exist.
	ErrMissingInclude = errors.New("lua: missing include")
	// ErrIncludeCycle reports scripts that include each other.
	ErrIncludeCycle = errors.New("lua: include cycle")
)

// IsNoScript reports whether err is Redis's NOSCRIPT reply: the script cache
// does not hold the SHA (a flushed cache, a restarted server, a new node).
func IsNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
