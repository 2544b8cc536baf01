//go:build !race

package queue

// raceDetector is whether the test binary runs with -race (race_on_test.go).
const raceDetector = false
