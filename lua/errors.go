package lua

import "errors"

// Errors callers can branch on with errors.Is.
var (
	// ErrCounterMissing reports a safe counter that is gone and has no start point to restore it from.
	ErrCounterMissing = errors.New("lua: counter missing and no start point to restore it")
	// ErrMarkerNotFound reports a feed marker that is no longer in the feed, so the page after it is unknown.
	ErrMarkerNotFound = errors.New("lua: feed marker not found")
	// ErrNotHeld reports a semaphore refresh or release by a holder that does not hold it (it expired or was never acquired).
	ErrNotHeld = errors.New("lua: semaphore not held")
	// ErrInvalid reports an argument a primitive cannot work with (a zero shard size, a negative limit).
	ErrInvalid = errors.New("lua: invalid argument")
)
