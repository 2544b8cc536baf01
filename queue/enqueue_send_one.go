package queue

import (
	"encoding/binary"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/shardq/shardq/internal/codes"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/script"
)

// plainCall is one partition's single plain enqueue: the prepared call and
// the tail shard its replies named, which the next call guesses (codes.None:
// yet). A wrong guess costs a command, never a task: see enqueue_one.lua.
type plainCall struct {
	call *rcall.Prepared
	tail atomic.Int64
	// shards is the partition's shard key prefix, T:s:; guess the key of
	// the last shard guessed, boxed once per shard, not once per call;
	// noGuess, T:s:-1, a key that never exists, stands for no guess
	shards  string
	guess   atomic.Pointer[shardGuess]
	noGuess any
	// limits is the script's shard size and feed cap, packed and boxed once
	limits any
	// frames are argument lists of this call, reused (plainFrame)
	frames sync.Pool
	// line holds the calls waiting for the one in flight (enqueue_send_coalesce.go)
	line line
}

// plainFrame is the argument list of one single Enqueue's call: the
// prepared call's fixed part, then the guessed shard's key, the shard size
// and feed cap (packLimits) and the message (the script reads the ID in
// it). The message is a pointer into the frame, boxed once when the frame
// is made, so a call fills the frame in place and boxes nothing, where a
// fresh argument list cost an allocation for itself and one per boxed
// value (BenchmarkEnqueue's allocs/op).
type plainFrame struct {
	args []any
	msg  msgArg
}

// plainArgs is how many arguments follow a plain call's fixed part.
const plainArgs = 3

// newFrame returns a frame of pc's call with its unchanging slots set.
func (pc *plainCall) newFrame() *plainFrame {
	f := &plainFrame{args: pc.call.Args(plainArgs)}
	tail := f.args[len(f.args)-plainArgs:]
	tail[1], tail[2] = pc.limits, &f.msg
	return f
}

// packLimits packs enqueue_one.lua's shard size and feed cap, 4 bytes
// each, big-endian (Config bounds both below 2^32): the script reads them
// with one call into C instead of two strtod.
func packLimits(shardSize, feedSize int) string {
	return string(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(shardSize)), uint32(feedSize)))
}

// set fills the frame for one call.
func (f *plainFrame) set(guess any, msg []byte) {
	f.args[len(f.args)-plainArgs] = guess
	f.msg.b = msg
}

// clear drops the frame's reference to one call's message, so a pooled
// frame does not keep it alive.
func (f *plainFrame) clear() { f.msg.b = nil }

// msgArg is a message as a Redis argument: go-redis writes its bytes as
// they are (encoding.BinaryMarshaler). Passed as a pointer, it is boxed
// without an allocation, where a []byte would be copied into one.
type msgArg struct{ b []byte }

// MarshalBinary returns the message's bytes, not a copy.
func (m *msgArg) MarshalBinary() ([]byte, error) { return m.b, nil }

// shardGuess is one tail shard's number and key, boxed as the script takes it.
type shardGuess struct {
	n   int64
	key any
}

// shardKey returns the script's key naming shard n, or T:s:-1 for no
// guess (n < 0).
func (pc *plainCall) shardKey(n int64) any {
	if n < 0 {
		return pc.noGuess
	}
	if g := pc.guess.Load(); g != nil && g.n == n {
		return g.key
	}
	g := &shardGuess{n: n, key: pc.shards + strconv.FormatInt(n, 10)}
	pc.guess.Store(g)
	return g.key
}

// learn records the tail a reply named. A reply that used the guess only
// moves the tail on (replies of concurrent calls arrive in any order); one
// that read the tail itself corrects a guess that missed (the shard was gone
// or full, say after the queue was deleted), unless a concurrent reply
// moved the tail on since.
func (pc *plainCall) learn(guess, tail int64, hit bool) {
	for {
		cur := pc.tail.Load()
		if cur == tail || (hit || cur != guess) && cur > tail {
			return
		}
		if pc.tail.CompareAndSwap(cur, tail) {
			return
		}
	}
}

// partKey names one queue partition in the prepared-call cache.
type partKey struct {
	queue     string
	partition int
}

// prepared returns the plain enqueue call of one partition, made once.
func (c *Client) prepared(queue string, partition int) *plainCall {
	pk := partKey{queue, partition}
	c.prepMu.RLock()
	pc := c.prep[pk]
	c.prepMu.RUnlock()
	if pc != nil {
		return pc
	}
	k := keys.For(c.cfg.Prefix, queue, partition)
	c.prepMu.Lock()
	defer c.prepMu.Unlock()
	if pc = c.prep[pk]; pc != nil {
		return pc
	}
	// the guessed shard is the fourth key, given with each call
	pc = &plainCall{call: script.EnqueueOne.PrepareKeys([]string{k.Feed(), keys.RankKey(k.Feed()), k.Guard()}, 1),
		shards: k.ShardPrefix(), noGuess: k.ShardPrefix() + strconv.Itoa(codes.None), limits: packLimits(c.cfg.ShardSize, c.cfg.FeedSize)}
	pc.frames.New = func() any { return pc.newFrame() }
	pc.tail.Store(codes.None)
	if c.prep == nil {
		c.prep = map[partKey]*plainCall{}
	}
	c.prep[pk] = pc
	return pc
}
