package queue

import (
	"fmt"
	"time"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/wire"
)

// State is where a task, a workflow node or a workflow is. A task is
// pending, scheduled, active, retry, succeeded or dead; a node waiting,
// enqueued, succeeded, dead, failed, skipped or cancelled; a workflow
// active, succeeded, failed or cancelled. A failed workflow is active
// again when a dead node is retried, and succeeds when every node then
// succeeds.
type State string

// The states, each marked with what it applies to.
const (
	StatePending   State = "pending"   // task: in the pending list, waiting for a worker
	StateScheduled State = "scheduled" // task: waiting for its ProcessAt/ProcessIn time
	StateActive    State = "active"    // task: leased by a worker, running; workflow: a node waits or is enqueued
	StateRetry     State = "retry"     // task: failed, waiting to run again
	StateDead      State = "dead"      // task: failed for good, kept in the dead feed; node: its task went dead, and retrying it resumes the graph
	StateSucceeded State = "succeeded" // task: kept for its Retention; node: its task succeeded; workflow: every node finished, none dead or failed
	StateWaiting   State = "waiting"   // node: a parent has not finished
	StateEnqueued  State = "enqueued"  // node: its task is pending, scheduled, active or retry
	StateFailed    State = "failed"    // node: a parent did not succeed, over an EdgeFail edge; workflow: every node finished, one dead or failed
	StateSkipped   State = "skipped"   // node: a parent did not succeed, over an EdgeSkip edge
	StateCancelled State = "cancelled" // node: the workflow was cancelled before it ran; workflow: cancelled, its enqueued nodes may still finish
)

// taskState refuses a State no task takes (a node's or a workflow's
// alone) for verb, naming it.
func taskState(verb string, s State) error {
	switch s {
	case StateWaiting, StateEnqueued, StateFailed, StateSkipped, StateCancelled:
		return fmt.Errorf("%w: %s: state %q is a workflow node's or a workflow's, not a task's", errInvalidOption, verb, s)
	}
	return nil
}

// stateOf is the State of a task record's state, which Redis spells
// "done" for StateSucceeded, as 0.1.0 wrote it.
func stateOf(s string) State {
	if s == "done" {
		return StateSucceeded
	}
	return State(s)
}

// TaskInfo describes a task: what was enqueued and, where known, its state.
type TaskInfo struct {
	// ID is canonical UUIDv7 text for a generated ID (time-ordered; 16
	// bytes in Redis), or the caller's TaskID as given.
	ID        string
	Queue     string
	Partition int
	Type      string
	// Payload is the payload bytes: msgpack unless Raw.
	Payload []byte
	Raw     bool
	// Malformed is set when the stored message does not decode (a foreign
	// or truncated push), a compressed or encrypted value of the task
	// does not open, or a msgpack payload or the steps claim more than
	// their bytes hold (a length past their end, nesting past 10,000
	// levels): Payload holds the stored bytes (opened, when only the
	// msgpack is bad), LastError why.
	Malformed bool
	// EncryptedWith is the ID of the key (Config.KeyRing) the payload is
	// encrypted with; "" when it is not encrypted.
	EncryptedWith string
	// Redacted is set when some of the task's values are encrypted with a
	// key the reader's KeyRing lacks, or it has none: the payload, the
	// result, the progress message, step values or the error. Those are
	// left empty.
	Redacted bool
	State    State

	MaxRetry  int
	Attempts  int // attempts started so far
	Timeout   time.Duration
	Deadline  time.Time
	Retention time.Duration
	UniqueBy  string
	// Group is the task's group for Limits.GroupConcurrency.
	Group string
	// Headers are the task's headers (Header, Config.ContextHeaders).
	Headers map[string]string
	// Progress is the last progress its handler reported
	// (worker.Task.SetProgress); nil when none. GetTask reads it.
	Progress *Progress
	// Result is what its handler wrote (worker.Task.SetResult), kept with
	// the task for its Retention; HasResult tells an empty result from
	// none. GetTask and WaitResult read it.
	Result    []byte
	HasResult bool
	// Steps are the steps its handler finished (worker.Step), in the
	// order they first finished. GetTask reads them.
	Steps []StepInfo
	// CancelRequested is set while an operator's cancel of the running
	// task (CancelTask) waits for its worker's next heartbeat. GetTask
	// reads it.
	CancelRequested bool

	EnqueuedAt    time.Time
	NextProcessAt time.Time // when a scheduled or retrying task is due
	StartedAt     time.Time
	FinishedAt    time.Time
	LastFailedAt  time.Time
	LastError     string
	Worker        string

	// WorkflowID is the workflow the task is a node of, a chain's or a
	// batch's among them, and Node its node's name there, as GetWorkflow
	// names it (a Chain's links are "1" to "n"); both "" for a task of no
	// workflow. A link of a chain that 0.1.0 enqueued has the chain's ID
	// and its link's number, though no workflow of that ID can be read.
	WorkflowID string
	Node       string

	// Rank is the task's rank in the feed it was read from, or in the
	// recent-tasks feed; 0 when it has left the feed.
	Rank int64

	// resultErr is why Result did not open, for WaitResult to say.
	resultErr error
}

// Decode decodes the payload into v: msgpack, as NewTask encodes it, or
// JSON for a raw payload (NewRawTask), the usual encoding of producers
// outside Go and of queues migrated from elsewhere.
func (ti *TaskInfo) Decode(v any) error {
	if err := wire.DecodePayload(ti.Payload, ti.Raw, v); err != nil {
		return fmt.Errorf("queue: task %s (%s): %w", ti.ID, ti.Type, err)
	}
	return nil
}

// newTaskInfo builds a TaskInfo from a message and, if any, its record.
func newTaskInfo(queue string, partition int, m *wire.Message, r *wire.Record) *TaskInfo {
	ti := &TaskInfo{
		ID: wire.PublicID(m.ID), Queue: queue, Partition: partition, Type: m.Type, Payload: m.Payload, Raw: m.Raw, Headers: m.Headers,
		State: StatePending, MaxRetry: m.MaxRetry, Timeout: time.Duration(m.Timeout) * time.Millisecond,
		Deadline: msTime(m.Deadline), Retention: time.Duration(m.Retention) * time.Millisecond,
		UniqueBy: m.Unique, Group: m.Key, EnqueuedAt: msTime(m.EnqueuedAt),
	}
	ti.WorkflowID, ti.Node = home.Place(m.Flow, m.ID)
	if r != nil {
		ti.State = stateOf(r.State)
		ti.Attempts = r.Attempts
		ti.NextProcessAt = msTime(r.NextAt)
		ti.StartedAt = msTime(r.StartedAt)
		ti.FinishedAt = msTime(r.FinishedAt)
		ti.LastFailedAt = msTime(r.LastFailedAt)
		ti.LastError = r.LastError
		ti.Worker = r.Worker
	}
	return ti
}

// msTime turns unix milliseconds into a time; 0 is the zero time.
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// StepInfo is a step a task's handler finished (worker.Step).
type StepInfo struct {
	Name       string
	FinishedAt time.Time
	// Value is the msgpack of what the step returned; see Decode.
	Value []byte
}

// Decode decodes the step's value into v, as the step returned it.
func (s StepInfo) Decode(v any) error {
	if err := wire.DecodePayload(s.Value, false, v); err != nil {
		return fmt.Errorf("queue: step %q: %w", s.Name, err)
	}
	return nil
}

// Progress is a running task's progress, as its handler last reported it.
type Progress struct {
	Percent int    // 0 to 100
	Message string // short, for people
	At      time.Time
}
