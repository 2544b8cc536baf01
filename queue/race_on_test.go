//go:build race

package queue

// raceDetector is whether the test binary runs with -race, under which
// sync.Pool drops items at random and allocation counts do not hold.
const raceDetector = true
