package lua

import (
	"errors"
	"strings"
)

// Errors callers can branch on with errors.Is.
var (
	// ErrMissingInclude reports an include directive naming a file that does not exist.
	ErrMissingInclude = errors.New("lua: missing include")
	// ErrIncludeCycle reports scripts that include each other.
	ErrIncludeCycle = errors.New("lua: include cycle")
	// ErrCounterMissing reports a safe counter that is gone and has no start point to restore it from.
	ErrCounterMissing = errors.New("lua: counter missing and no start point to restore it")
	// ErrMarkerNotFound reports a feed marker that is no longer in the feed, so the page after it is unknown.
	ErrMarkerNotFound = errors.New("lua: feed marker not found")
	// ErrNotHeld reports a semaphore refresh or release by a holder that does not hold it (it expired or was never acquired).
	ErrNotHeld = errors.New("lua: semaphore not held")
	// ErrInvalidArgument reports an argument a primitive cannot work with (a zero shard size, a negative limit).
	ErrInvalidArgument = errors.New("lua: invalid argument")
)

// IsNoScript reports whether err is Redis's NOSCRIPT reply: the script cache
// does not hold the SHA (a flushed cache, a restarted server, a new node).
func IsNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
