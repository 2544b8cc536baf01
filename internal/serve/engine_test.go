package serve

import "testing"

// TestQueueList: the start-up log shows queues as --queues takes them.
func TestQueueList(t *testing.T) {
	t.Parallel()
	if got := queueList(map[string]int{"email": 3, "default": 1}); got != "default:1,email:3" {
		t.Fatalf("queueList = %q, want default:1,email:3", got)
	}
}
