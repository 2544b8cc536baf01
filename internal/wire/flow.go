package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// FlowRef is a task's place in a flow, carried in its message (Message.Flow)
// so the worker knows at ack time, without a read, that the outcome must
// be reported, and where: "b<home>:<batch id>" for a batch member,
// "c<home>:<chain id>:<link>" for a chain link (links count from 1),
// "w<home>:<workflow id>:<node name>" for a workflow's node (a workflow ID
// has no colon; the name may). lua/engine/include/home_apply.lua parses the same
// text.
type FlowRef struct {
	Kind byte // 'b' batch, 'c' chain, 'w' workflow
	Home int
	ID   string
	Link int    // chains only
	Node string // workflows only
}

// String returns the ref's stored text.
func (r FlowRef) String() string {
	s := string(r.Kind) + strconv.Itoa(r.Home) + ":" + r.ID
	switch r.Kind {
	case 'c':
		s += ":" + strconv.Itoa(r.Link)
	case 'w':
		s += ":" + r.Node
	}
	return s
}

// ParseFlowRef parses a ref's stored text.
func ParseFlowRef(s string) (FlowRef, error) {
	r, ok := parseFlowRef(s)
	if !ok {
		return FlowRef{}, fmt.Errorf("bad flow ref %q", s)
	}
	return r, nil
}

// parseFlowRef is ParseFlowRef but for the error, which only a bad ref
// pays for.
func parseFlowRef(s string) (FlowRef, bool) {
	if len(s) < 4 || (s[0] != 'b' && s[0] != 'c' && s[0] != 'w') {
		return FlowRef{}, false
	}
	head, rest, ok := strings.Cut(s[1:], ":")
	home, err := strconv.Atoi(head)
	if !ok || err != nil || rest == "" {
		return FlowRef{}, false
	}
	r := FlowRef{Kind: s[0], Home: home, ID: rest}
	switch r.Kind {
	case 'w':
		r.ID, r.Node, ok = strings.Cut(rest, ":")
		ok = ok && r.ID != "" && r.Node != ""
	case 'c':
		i := strings.LastIndexByte(rest, ':')
		r.ID = rest[:max(i, 0)]
		r.Link, err = strconv.Atoi(rest[i+1:])
		ok = i > 0 && err == nil && r.Link >= 1
	}
	return r, ok
}

// Delivery is one entry of a workflow home's outbox: a task to enqueue into
// its queue partition under its fixed ID (the ID claim makes a second
// delivery a no-op). Encoded as a msgpack array, its message as a string:
// Redis's cmsgpack reads no binary type, and a workflow's release on one
// server reads it (include/wf_names.lua). Otherwise Lua copies it unread.
type Delivery struct {
	Queue      string
	Partition  int
	Partitions int // the queue's partition count, for the queue registry
	ID         string
	Msg        []byte
	At, In     int64 // ProcessAt (unix ms), ProcessIn (ms); 0 = none
	Unique     string
	UniqueTTL  int64 // ms
}

// EncodeDelivery returns d's stored bytes.
func EncodeDelivery(d *Delivery) ([]byte, error) {
	return msgpack.Marshal([]any{d.Queue, d.Partition, d.Partitions, d.ID, string(d.Msg), d.At, d.In, d.Unique, d.UniqueTTL})
}

// DecodeDelivery reads a stored delivery.
func DecodeDelivery(b []byte) (*Delivery, error) {
	var d Delivery
	err := decodeFields(b, &d.Queue, &d.Partition, &d.Partitions, &d.ID, &d.Msg, &d.At, &d.In, &d.Unique, &d.UniqueTTL)
	if err == nil && (d.Queue == "" || d.ID == "" || len(d.Msg) == 0) {
		err = errors.New("missing queue, id or message")
	}
	if err != nil {
		return nil, fmt.Errorf("decode flow delivery (%d bytes): %w", len(b), err)
	}
	return &d, nil
}

// FlowNote is a flow task's outcome on its way to the flow's home, as
// the ack and fail scripts write it (cmsgpack): {ref, member, outcome ("s"
// succeeded, "d" dead), result, error}.
type FlowNote struct {
	Ref     string
	Member  string
	Outcome string
	Result  []byte
	Err     string
}

// DecodeFlowNote reads a stored notification.
func DecodeFlowNote(b []byte) (*FlowNote, error) {
	var n FlowNote
	var res string
	if err := decodeFields(b, &n.Ref, &n.Member, &n.Outcome, &res, &n.Err); err != nil {
		return nil, fmt.Errorf("decode flow notification (%d bytes): %w", len(b), err)
	}
	n.Result = []byte(res)
	return &n, nil
}

// decodeFields decodes b, a msgpack array, into fields (decodeArray).
func decodeFields(b []byte, fields ...any) error {
	dec, err := NewDecoder(b)
	if err != nil {
		return err
	}
	return decodeArray(dec, fields)
}

// NodeTask is a workflow node's task as a producer on one Redis server
// stores it until the node is released, when its route takes the common
// layout: no delay, an ID under 128 bytes, a queue under 256 bytes and a
// partition under 65,536. Four bytes (the ID's length, the queue's length,
// the partition big-endian), the ID, the queue, then the message. The
// script that releases the node reads it with one field and four calls
// (include/wf_split.lua); reading the route from its own field took
// a second field and eight. Another task is stored as its bare message,
// which opens with a msgpack array (0x90 or above), and its route is read.
func NodeTask(id, queue string, partition int, msg []byte) ([]byte, bool) {
	if len(id) == 0 || len(id) >= 0x80 || len(queue) > 0xff || partition < 0 || partition > 0xffff {
		return nil, false
	}
	b := make([]byte, 0, 4+len(id)+len(queue)+len(msg))
	b = append(b, byte(len(id)), byte(len(queue)), byte(partition>>8), byte(partition))
	b = append(b, id...)
	b = append(b, queue...)
	return append(b, msg...), true
}

// SplitNodeTask reads what NodeTask wrote; ok is false for a bare
// message.
func SplitNodeTask(b []byte) (id, queue string, partition int, msg []byte, ok bool) {
	if len(b) < 4 || b[0] == 0 || b[0] >= 0x80 || len(b) < 4+int(b[0])+int(b[1]) {
		return "", "", 0, nil, false
	}
	q := 4 + int(b[0])
	return string(b[4:q]), string(b[q : q+int(b[1])]), int(b[2])<<8 | int(b[3]), b[q+int(b[1]):], true
}
