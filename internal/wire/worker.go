package wire

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// WorkerStatus is what a worker process publishes with each heartbeat
// (keys.WorkerStatus, a hash of worker ID -> this, msgpack): who it is,
// what it serves and how busy it is. The dashboard's workers page and the
// autoscaling figure read it.
type WorkerStatus struct {
	Host        string               `msgpack:"h"`
	PID         int                  `msgpack:"p"`
	Started     int64                `msgpack:"s"` // unix ms
	Queues      map[string]int       `msgpack:"q"` // queue -> weight
	Strict      bool                 `msgpack:"x"`
	Concurrency int                  `msgpack:"c"`
	Work        map[string]QueueWork `msgpack:"w"` // per queue
	// Protocol is the protocol version the worker follows
	// (internal/protocol); 0.1.0 workers leave it empty.
	Protocol string `msgpack:"v"`
}

// QueueWork is one worker's work on one queue.
type QueueWork struct {
	Running int   `msgpack:"r"` // handlers running now
	Done    int64 `msgpack:"d"` // handlers finished since the worker started
	// MeanMS is the recent mean handler time in ms (an exponentially
	// weighted mean over heartbeats), 0 before the first finished.
	MeanMS float64 `msgpack:"m"`
	// Ahead is how many tasks the worker leased ahead of its free slots
	// (prefetch) and holds, not yet started: leased, so active in Redis,
	// but not running.
	Ahead int `msgpack:"a"`
	// AheadGroups counts, of Ahead, the tasks of each group (tasks
	// enqueued with a group); its size is bounded by Ahead's.
	AheadGroups map[string]int `msgpack:"g,omitempty"`
}

// Encode returns s's msgpack bytes.
func (s *WorkerStatus) Encode() ([]byte, error) { return msgpack.Marshal(s) }

// DecodeWorkerStatus decodes what WorkerStatus.Encode wrote.
func DecodeWorkerStatus(b []byte) (*WorkerStatus, error) {
	var s WorkerStatus
	if err := Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode worker status (%d bytes): %w", len(b), err)
	}
	return &s, nil
}

// Progress is a task's progress as its handler reports it (keys.Progress).
type Progress struct {
	Percent int    `msgpack:"p"`
	Message string `msgpack:"m"`
	At      int64  `msgpack:"t"` // unix ms
}

// DecodeProgress decodes what msgpack.Marshal wrote of a Progress.
func DecodeProgress(b []byte) (*Progress, error) {
	var p Progress
	if err := Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decode progress (%d bytes): %w", len(b), err)
	}
	return &p, nil
}
