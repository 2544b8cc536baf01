package keys

import (
	"encoding/base64"
	"hash/fnv"
	"strconv"

	"github.com/google/uuid"
)

// FlowPartitions is how many workflow homes there are: every chain and batch
// lives in one of them (HomeOf), so every workflow script touches one slot and
// a worker sweeps all homes without SCAN. Changing it moves every flow:
// it is a constant of the stored layout.
const FlowPartitions = 16

// FlowHome is the key space of one workflow home, hash tag {<prefix>:flows:<n>}.
type FlowHome struct {
	H string // "{prefix:flows:n}"
}

// Home returns workflow home n under prefix.
func Home(prefix string, n int) FlowHome {
	return FlowHome{H: "{" + prefix + ":flows:" + strconv.Itoa(n) + "}"}
}

// HomeOf returns the home number of the flow with ID id: FNV-1a of the ID
// modulo FlowPartitions.
func HomeOf(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % FlowPartitions)
}

// Out is the zset entry ID -> visible-at (ms) of the home's delivery
// outbox: tasks (members, next links, callbacks) to enqueue into their
// queues. OutMsg holds the entries.
func (h FlowHome) Out() string { return h.H + ":out" }

// OutMsg is the hash entry ID -> delivery (wire.Delivery) of Out's entries.
func (h FlowHome) OutMsg() string { return h.H + ":outmsg" }

// Batch is the hash of the counters, flags and callbacks of batch id,
// one 0.1.0 created (a batch is a workflow since: Workflow).
func (h FlowHome) Batch(id string) string { return h.H + ":b:" + id }

// Members is the hash member -> state ("p", "s", "d") of batch id, one
// 0.1.0 created.
func (h FlowHome) Members(id string) string { return h.H + ":bm:" + id }

// Chain is the hash of chain id: its links, their states and results,
// where it stopped.
func (h FlowHome) Chain(id string) string { return h.H + ":c:" + id }

// Workflow is the hash of workflow id: its state and counters, and per
// node its task, state, parents' effects, children, delivery until it is
// released, result and error (lua/engine/include/wf_names.lua). Its name holds
// the ID's short form.
func (h FlowHome) Workflow(id string) string { return h.H + ":w:" + ShortID(id) }

// ShortID returns the form of workflow ID id (a UUID) that its key, its
// entry in Recent and its tasks' flow refs carry: the UUID's 16 bytes in
// unpadded base64url, 22 characters against 36, with no colon. A ref
// travels in every node's message, so the short form keeps each enqueued
// node smaller. An ID that is no UUID stays as it is.
func ShortID(id string) string {
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return id
	}
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// LongID returns the UUID text of a short ID (ShortID); anything else
// stays as it is.
func LongID(s string) string {
	if len(s) != 22 {
		return s
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return s
	}
	return uuid.UUID(b).String()
}

// Recent is the zset "b:<id>", "c:<id>" or "w:<id>" -> creation time (ms) of the
// home's newest flows, capped.
func (h FlowHome) Recent() string { return h.H + ":recent" }

// Notify is the list of flow notifications (wire.FlowNote) written by the
// partition's ack and fail scripts, waiting to be forwarded to their homes.
func (p Partition) Notify() string { return p.T + ":notify" }

// WorkflowSweep is the lease (SET NX, one WorkflowSweep interval) of the worker
// that sweeps every workflow home's outbox this interval: one sweeper is
// enough, whatever the number of workers.
func WorkflowSweep(prefix string) string { return prefix + ":flows:sweep" }
