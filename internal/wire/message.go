package wire

import (
	"fmt"
	"slices"

	"github.com/vmihailenco/msgpack/v5"
)

// Message is a task as enqueued: immutable, encoded as a msgpack array
// whose first element is the ID, so a Lua script can read the ID without
// decoding the rest. New fields go at the end; older messages decode with
// them zero.
//
// A plain task (see Compact) is written in a shorter form: the array
// header 0x91 (msgpack payload) or 0x92 (raw payload), the ID and the type
// as msgpack strings, then the payload's bytes to the end, unframed. No
// full message has fewer than 3 fields, so the first byte tells the forms
// apart, and a reader of the ID (HeadID, include/msg_head.lua) reads both
// alike. A plain task's message is 5 bytes shorter: no key, Raw or
// MaxRetry fields and no payload header.
type Message struct {
	ID string
	// Key is the task's group ("" = none); second, so scripts
	// read it without decoding the rest.
	Key        string
	Type       string
	Payload    []byte
	Raw        bool  // Payload is raw bytes, not msgpack
	MaxRetry   int   // retries after the first attempt
	Timeout    int64 // ms per attempt; 0 = none
	Deadline   int64 // unix ms; 0 = none
	Retention  int64 // ms to keep the task after success; 0 = not kept
	Unique     string
	EnqueuedAt int64 // unix ms
	// Headers are the task's small string map (trace context, tenant,
	// ...). Encoded as a 12th element only when there are any, so a task
	// without headers costs not a byte more. Trailing zero fields are not
	// written at all (fieldCount), nor an EnqueuedAt its UUIDv7 ID holds.
	Headers map[string]string
	// Flow is the task's place in a chain or batch (FlowRef's text; ""
	// = none), a 13th element written only when set: the worker passes it
	// to the ack, so only flow tasks pay for flow bookkeeping.
	Flow string
}

// The first byte of a compact message: an array header with fewer fields
// than any full message has.
const (
	compactMsgpack byte = 0x91
	compactRaw     byte = 0x92
)

// CompactMaxRetry is the MaxRetry a compact message stands for. It is part
// of the format, not a setting: a task with any other MaxRetry is written
// in the full form.
const CompactMaxRetry = 25

// Compact reports whether the message is written in the compact form: a
// plain task, with no group, the default MaxRetry, no timeout,
// deadline, retention, uniqueness, headers or flow, and an EnqueuedAt its
// UUIDv7 ID holds.
func (m *Message) Compact() bool {
	return m.Key == "" && m.MaxRetry == CompactMaxRetry && m.Timeout == 0 && m.Deadline == 0 && m.Retention == 0 &&
		m.Unique == "" && len(m.Headers) == 0 && m.Flow == "" && m.storedEnqueuedAt() == 0 && m.ID != ""
}

// fields lists the message's fields in wire order.
func (m *Message) fields() []any {
	return []any{&m.ID, &m.Key, &m.Type, &m.Payload, &m.Raw, &m.MaxRetry, &m.Timeout, &m.Deadline, &m.Retention, &m.Unique, &m.EnqueuedAt, &m.Headers, &m.Flow}
}

// EncodeMsgpack writes the message as an array, integers in their
// shortest form, trailing zero fields left out (see fieldCount). It always
// writes the full form, which is msgpack throughout, so a message can sit
// inside another msgpack value; Encode writes the compact form where it
// can.
func (m *Message) EncodeMsgpack(e *msgpack.Encoder) error {
	n := m.fieldCount()
	_ = e.EncodeArrayLen(n)
	for i, f := range m.fields()[:n] {
		var err error
		switch i {
		case 5:
			err = e.EncodeInt(int64(m.MaxRetry))
		case 6, 7, 8:
			err = e.EncodeInt(*f.(*int64))
		case 10:
			err = e.EncodeInt(m.storedEnqueuedAt())
		case 11:
			_ = e.EncodeMapLen(len(m.Headers))
			for _, k := range sortedKeys(m.Headers) {
				_ = e.EncodeString(k)
				err = e.EncodeString(m.Headers[k])
			}
		default:
			err = e.Encode(f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fieldCount is how many of the message's fields are written: every field
// up to the last one that is not zero, where an EnqueuedAt the ID already
// says (a generated UUIDv7 holds its millisecond) counts as zero. A plain
// task written in full is 6 fields, not 11. Decoders read
// any prefix, the missing fields zero, and take EnqueuedAt from the ID.
func (m *Message) fieldCount() int {
	switch {
	case m.Flow != "":
		return 13 // the headers are written too, maybe an empty map
	case len(m.Headers) > 0:
		return 12
	case m.storedEnqueuedAt() != 0:
		return 11
	case m.Unique != "":
		return 10
	case m.Retention != 0:
		return 9
	case m.Deadline != 0:
		return 8
	case m.Timeout != 0:
		return 7
	case m.MaxRetry != 0:
		return 6
	case m.Raw:
		return 5
	case len(m.Payload) > 0:
		return 4
	}
	return 3
}

// storedEnqueuedAt is EnqueuedAt as written: 0 when the ID says it.
func (m *Message) storedEnqueuedAt() int64 {
	if at, ok := IDTime(m.ID); ok && at == m.EnqueuedAt {
		return 0
	}
	return m.EnqueuedAt
}

// deriveEnqueuedAt fills in an EnqueuedAt left out because the ID says it.
func (m *Message) deriveEnqueuedAt() {
	if m.EnqueuedAt == 0 {
		m.EnqueuedAt, _ = IDTime(m.ID)
	}
}

// DecodeMsgpack reads a message array of any length: missing trailing
// fields stay zero, unknown ones are skipped, so the format can grow.
func (m *Message) DecodeMsgpack(d *msgpack.Decoder) error {
	if err := decodeArray(d, m.fields()); err != nil {
		return err
	}
	m.deriveEnqueuedAt()
	return nil
}

// Encode returns the message's bytes: the compact form for a plain task,
// else the full msgpack array.
func (m *Message) Encode() ([]byte, error) {
	return m.AppendEncode(nil, false), nil
}

// AppendEncode appends the message's bytes to b, in the compact form where
// the message allows it and full is false, else in the full form. It grows
// b once, to the size the message needs, when b has not the room: a caller
// that reuses b encodes with no allocation.
func (m *Message) AppendEncode(b []byte, full bool) []byte {
	size := 40 + len(m.ID) + len(m.Key) + len(m.Type) + len(m.Payload) + len(m.Unique) + len(m.Flow)
	for k, v := range m.Headers {
		size += 10 + len(k) + len(v)
	}
	if cap(b)-len(b) < size {
		b = slices.Grow(b, size)
	}
	if !full && m.Compact() {
		return appendCompact(b, m)
	}
	return appendMessage(b, m)
}

// AppendCompactHead appends the compact form's bytes before the payload
// to b, when the message allows that form and full is false, and reports
// whether it did. The payload then goes after them as it is, to the end:
// a producer that compresses it writes it there straight away.
func (m *Message) AppendCompactHead(b []byte, full bool) ([]byte, bool) {
	if full || !m.Compact() {
		return b, false
	}
	return appendCompactHead(b, m), true
}

// DecodeMessageString decodes a message held in a string, as go-redis
// returns it, into m (which a caller may keep on its stack). Its string
// fields share the string's memory; the payload is a copy.
func DecodeMessageString(s string, m *Message) error {
	if decodeFast(s, m) && m.ID != "" && m.Type != "" {
		return nil
	}
	got, err := DecodeMessage([]byte(s))
	if err != nil {
		return err
	}
	*m = *got
	return nil
}

// DecodeMessage decodes b, in either form. A message that does not
// decode (truncated, foreign, corrupted) is an error that says why.
func DecodeMessage(b []byte) (*Message, error) {
	var m Message
	if decodeFast(b, &m) && m.ID != "" && m.Type != "" {
		return &m, nil
	}
	if len(b) > 0 && (b[0] == compactMsgpack || b[0] == compactRaw) {
		// decodeFast reads every compact message there is
		return nil, fmt.Errorf("decode task message (%d bytes): a compact message whose ID or type is missing or cut short", len(b))
	}
	m = Message{}
	if err := Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode task message (%d bytes): %w", len(b), err)
	}
	if m.ID == "" || m.Type == "" {
		return nil, fmt.Errorf("decode task message (%d bytes): missing id or type", len(b))
	}
	return &m, nil
}

// HeadKey returns the group (Message.Key) of a stored message without
// decoding the rest, its payload above all: a compact message has none,
// and a full one holds it second, after the ID. It reports false for a
// message not in either layout; DecodeMessageString then reads it.
func HeadKey(s string) (string, bool) {
	if len(s) > 0 && (s[0] == compactMsgpack || s[0] == compactRaw) {
		return "", true
	}
	if len(s) == 0 || s[0] < 0x93 || s[0] > 0x9d {
		return "", false
	}
	r := reader[string]{b: s, i: 1, ok: true}
	r.str()
	key := r.str()
	return key, r.ok
}

// HeadID returns the task ID a message opens with, read the way the Lua
// scripts read it (include/msg_head.lua): an array, then a non-empty string
// of at most 65,535 bytes. It reports false for a message that does not
// open that way; scripts lease such a message under a "bad:" ID of their
// own and say so.
func HeadID(s string) (string, bool) {
	r := reader[string]{b: s, ok: true}
	switch c := r.byte1(); {
	case c >= 0x90 && c <= 0x9f:
	case c == 0xdc:
		r.take(2)
	case c == 0xdd:
		r.take(4)
	default:
		return "", false
	}
	c := r.byte1()
	if c == 0xdb {
		return "", false // str32: the scripts do not read it
	}
	id := r.take(r.length(c, 0xa0, 0x1f, 0xd9, 0xda, 0xdb))
	return id, r.ok && id != ""
}
