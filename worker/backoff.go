package worker

import (
	"math/rand/v2"
	"time"
)

// DefaultRetryDelay is the backoff between attempts: 10s doubling with
// every attempt, capped at 6h, with ±20% jitter so tasks that failed
// together do not retry together.
func DefaultRetryDelay(attempt int, _ error, _ *Task) time.Duration {
	const base, ceiling = 10 * time.Second, 6 * time.Hour
	d := ceiling
	if attempt >= 1 && attempt <= 12 {
		d = min(base<<(attempt-1), ceiling)
	}
	jitter := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(d) * jitter)
}
