package queue

import "testing"

// TestPurgeShares: a purge round asks for at most what is left in all, at
// most a batch per partition, and for all of it when it fits.
func TestPurgeShares(t *testing.T) {
	for _, c := range []struct {
		left int64
		n    int
	}{{10, 8}, {3, 8}, {1, 1}, {7, 3}, {5000, 3}, {1200, 2}, {499, 1}} {
		asks := purgeShares(c.left, c.n)
		var sum int64
		for _, a := range asks {
			if a < 0 || a > bulkBatch {
				t.Fatalf("left %d over %d: ask %d", c.left, c.n, a)
			}
			sum += a
		}
		if want := min(c.left, int64(bulkBatch*c.n)); sum != want {
			t.Fatalf("left %d over %d partitions: asks %v sum to %d, want %d", c.left, c.n, asks, sum, want)
		}
	}
}
