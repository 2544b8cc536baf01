package queue

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/shardq/shardq/internal/dicts"
	"github.com/shardq/shardq/internal/envelope"
	"github.com/shardq/shardq/internal/wire"
)

// The enqueue pipeline's first stage, build: a task and its options become
// a pending task, its message encoded as Redis stores it (compact or full
// form, the payload compressed, against its type's dictionary when there
// is one, and encrypted), its ID generated or claimed, and what later
// stages need: its route key, its schedule, its unique lock.

// pending is one task ready to send.
type pending struct {
	index   int // its place in the batch (batch.tasks, infos, errs)
	info    *TaskInfo
	msg     []byte
	id      string    // stored form (info.ID is the public one)
	at      int64     // unix ms, 0 = none
	in      int64     // ms, 0 = none
	due     time.Time // when a scheduled task is due, by this client's clock
	unique  string
	uttl    int64
	idClaim int64
	wait    bool   // WaitForRoom: a full queue is waited for, not an error
	route   string // what picks its partition by hash ("" = round-robin)
}

// plain reports whether the task takes the script's short layout: pending
// now, a generated ID, not unique.
func (p *pending) plain() bool {
	return p.at == 0 && p.in == 0 && p.unique == "" && p.idClaim == 0
}

// headers returns the headers Config.ContextHeaders takes from ctx.
func (c *Client) headers(ctx context.Context) map[string]string {
	if c.cfg.ContextHeaders == nil {
		return nil
	}
	return c.cfg.ContextHeaders(ctx)
}

// buildAll builds every task of b, its error in b.errs. A large batch is
// built on GOMAXPROCS goroutines: compressing and encrypting cost the
// producer CPU per task, and the batch's round trip waits for all of them.
func (c *Client) buildAll(b *batch, tasks []*Task, opts []Option, ctxHeaders map[string]string) {
	now := time.Now()
	run := func(from, to int) {
		for i := from; i < to; i++ {
			b.tasks[i], b.errs[i] = c.build(tasks[i], opts, ctxHeaders, now, nil)
			b.tasks[i].index = i
		}
	}
	procs := runtime.GOMAXPROCS(0)
	if len(tasks) < parallelBuild || procs == 1 {
		run(0, len(tasks))
		return
	}
	var wg sync.WaitGroup
	step := (len(tasks) + procs - 1) / procs
	for from := 0; from < len(tasks); from += step {
		wg.Go(func() { run(from, min(from+step, len(tasks))) })
	}
	wg.Wait()
}

// parallelBuild is the least batch whose tasks buildAll builds on several
// goroutines.
const parallelBuild = 128

// build validates one task and encodes its message. Its partition is
// route's to pick. buf, when not nil, is where the message is encoded
// (reused storage).
func (c *Client) build(t *Task, callOpts []Option, ctxHeaders map[string]string, now time.Time, buf []byte) (pending, error) {
	if t == nil {
		return pending{}, fmt.Errorf("%w: nil task", errInvalidTask)
	}
	if err := checkType(t.typ); err != nil {
		return pending{}, err
	}
	if len(t.payload) > c.cfg.MaxPayloadSize {
		return pending{}, fmt.Errorf("%w: task %q payload is %d bytes, limit %d", errPayloadTooLarge, t.typ, len(t.payload), c.cfg.MaxPayloadSize)
	}
	o, err := resolveOptions(t.opts, callOpts)
	if err != nil {
		return pending{}, err
	}
	m := wire.Message{
		ID: wire.StoredID(o.taskID), Key: o.key, Type: t.typ, Payload: t.payload, Raw: t.raw, MaxRetry: o.maxRetry,
		Timeout: o.timeout.Milliseconds(), Retention: o.retention.Milliseconds(), EnqueuedAt: now.UnixMilli(),
		Flow: o.flow,
	}
	m.Headers = mergeHeaders(ctxHeaders, o.headers)
	p := pending{wait: o.waitRoom}
	if m.ID == "" {
		m.ID = c.generateID()
		// the ID's own millisecond: then the message need not carry it
		m.EnqueuedAt, _ = wire.IDTime(m.ID)
	} else {
		p.idClaim = c.cfg.IDTTL.Milliseconds()
	}
	if !o.deadline.IsZero() {
		m.Deadline = o.deadline.UnixMilli()
	}
	if o.unique > 0 || o.untilFinished {
		m.Unique = o.uniqueID
		if m.Unique == "" {
			sum := sha1.Sum(t.payload)
			m.Unique = t.typ + ":" + hex.EncodeToString(sum[:])
		}
		p.unique, p.uttl = m.Unique, o.unique.Milliseconds()
		if o.untilFinished {
			// < 0: until it finishes, then -uttl - 1 ms (lua/engine/include/unique.lua)
			p.uttl = -o.uniqueAfter.Milliseconds() - 1
		}
	}
	if !o.processAt.IsZero() {
		p.at = o.processAt.UnixMilli()
		p.due = o.processAt
	}
	if p.in = o.processIn.Milliseconds(); p.in > 0 {
		// Redis times the delay by its own clock; this is the client's
		// reading of the same moment, for the returned TaskInfo only.
		p.due = now.Add(o.processIn).Round(0) // wall clock only, as GetTask reports
	}
	p.route = routeKey(m.ID, m.Key, m.Unique, p.idClaim > 0)
	p.info = newTaskInfo(o.queue, 0, &m, nil)
	p.id = m.ID
	if p.msg, err = c.encode(&m, buf); err != nil {
		return pending{}, fmt.Errorf("queue: task %q: %w", t.typ, err)
	}
	return p, nil
}

// generateID returns a new task ID in its stored form: wire.NewID's,
// unless a test fixed the IDs (newID).
func (c *Client) generateID() string {
	if c.newID != nil {
		return c.newID()
	}
	return wire.NewID()
}

// mergeHeaders returns the message's headers: the context's non-empty
// ones, then the task's, which override them; nil when there are none.
func mergeHeaders(ctxHeaders, own map[string]string) map[string]string {
	var h map[string]string
	if len(ctxHeaders) > 0 {
		h = make(map[string]string, len(ctxHeaders)+len(own))
		for k, v := range ctxHeaders {
			if k != "" && v != "" {
				h[k] = v
			}
		}
	}
	for k, v := range own {
		if h == nil {
			h = make(map[string]string, len(own))
		}
		h[k] = v
	}
	return h
}

// encode returns m as Redis stores it, its payload compressed (against
// its type's dictionary, once one is ready) and encrypted as Config asks,
// in buf when it has room. m's payload becomes the stored one.
func (c *Client) encode(m *wire.Message, buf []byte) ([]byte, error) {
	if need := 8 + len(m.ID) + len(m.Type) + c.codec.MaxSize(len(m.Payload)); cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	var dict *envelope.Dict
	if c.cfg.Compression == "fast" && c.cfg.KeyRing == nil && len(m.Payload) >= c.cfg.CompressAbove && len(m.Payload) <= dicts.MaxPayload {
		dict = c.dicts.For(m.Type, m.Payload)
	}
	if head, ok := m.AppendCompactHead(buf[:0], c.cfg.FullMessages); ok {
		// the compact form ends with the payload: wrap it in place, one
		// buffer per task
		return c.codec.WrapDict(head, m.Payload, dict, m.ID, envelope.Payload)
	}
	var err error
	if m.Payload, err = c.codec.WrapDict(nil, m.Payload, dict, m.ID, envelope.Payload); err != nil {
		return nil, err
	}
	return m.AppendEncode(buf[:0], c.cfg.FullMessages), nil
}

// routeKey is what places a task by hash: its group when it
// has one, so every task of a key meets the key's limit in one partition;
// else its uniqueness ID or chosen ID, so duplicates meet in one script;
// "" (round-robin) otherwise.
func routeKey(id, concKey, unique string, chosenID bool) string {
	switch {
	case concKey != "":
		return concKey
	case unique != "":
		return unique
	case chosenID:
		return id
	}
	return ""
}

// msgBufs holds message buffers for the single Enqueue, which encodes
// into one and hands it back once the call has returned.
var msgBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledMsg bounds the buffers kept: a rare large payload's is dropped.
const maxPooledMsg = 4 << 10

// getMsgBuf returns an empty message buffer.
func getMsgBuf() *[]byte {
	b := msgBufs.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

// putMsgBuf keeps used, the encoding that went into b, as b's storage for
// a later Enqueue: b may have grown while the message was encoded.
func putMsgBuf(b *[]byte, used []byte) {
	if cap(used) > cap(*b) {
		*b = used
	}
	if cap(*b) <= maxPooledMsg {
		msgBufs.Put(b)
	}
}
