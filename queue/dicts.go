package queue

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/envelope"
)

// A producer learns a compression dictionary per task type from the
// type's first payloads, stores it in Redis, and from then on compresses
// the type's payloads against it (CompressFast, without a key ring):
// small documents of one kind share most of their bytes.
const (
	dictSamples = 32       // payloads a dictionary is made of, at most
	dictBytes   = 60 << 10 // their bytes, at most (S2 takes 64 KiB)
	dictTypes   = 1000     // task types a client learns dictionaries for
	// dictMaxPayload bounds the payloads sampled and compressed against a
	// dictionary: a larger one repeats itself enough to compress alone
	dictMaxPayload = 4 << 10
	dictWriteWait  = 5 * time.Second
)

// learner holds a client's dictionaries per task type.
type learner struct {
	rdb    redis.UniversalClient
	prefix string

	mu    sync.Mutex
	types map[string]*learning
}

// learning is one task type's dictionary, or the samples toward it.
type learning struct {
	samples []byte
	n       int
	dict    *envelope.Dict // stored in Redis: ready to compress against
	writing bool
}

func newLearner(rdb redis.UniversalClient, prefix string) *learner {
	return &learner{rdb: rdb, prefix: prefix, types: map[string]*learning{}}
}

// dict returns the dictionary to compress a payload of typ against, or
// nil while there is none yet; it takes payload as a sample toward one.
func (l *learner) dict(typ string, payload []byte) *envelope.Dict {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.types[typ]
	if e == nil {
		if len(l.types) >= dictTypes {
			return nil
		}
		e = &learning{}
		l.types[typ] = e
	}
	if e.dict != nil || e.writing {
		return e.dict
	}
	e.samples = append(e.samples, payload...)
	e.n++
	if e.n < dictSamples && len(e.samples) < dictBytes {
		return nil
	}
	sample := e.samples[max(0, len(e.samples)-dictBytes):]
	e.samples, e.n, e.writing = nil, 0, true
	go l.store(e, sample)
	return nil
}

// store makes the dictionary of sample and writes it to Redis; only once
// Redis has it do payloads use it, so every reader finds it. A failed
// write starts the samples over.
func (l *learner) store(e *learning, sample []byte) {
	d := envelope.NewDict(sample)
	var err error
	if d != nil {
		ctx, cancel := context.WithTimeout(context.Background(), dictWriteWait)
		// NX: the ID is the content's hash, so a stored one is this one
		err = l.rdb.SetNX(ctx, envelope.DictKey(l.prefix, d.ID), d.Bytes, 0).Err()
		cancel()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.writing = false
	if d != nil && err == nil {
		e.dict = d
	}
}
