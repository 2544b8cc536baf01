// Package dicts learns a compression dictionary per task type for the
// producers of a prefix, and shares it with them through Redis.
package dicts

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/envelope"
)

// A producer compresses a task type's small payloads against a dictionary
// made of earlier payloads of the type (queue.Config.Compression "fast", without a key
// ring): small documents of one kind share most of their bytes.
//
// A type has one dictionary per prefix, however many producers run and
// restart: <prefix>:dicts maps the type to its dictionary's ID, set once
// by the first producer that stored one (HSETNX). A producer first looks
// the type up there; only when it finds none does it learn one from the
// type's first payloads, store it (SET NX), and claim the type for it. A
// producer that loses that race uses the winner's. Until a dictionary is
// ready, payloads are compressed alone.
//
// Dictionaries never expire: a stored task may need one for as long as
// it is kept. So their count is bounded instead: a prefix holds
// dictionaries for at most dictTypes types (a few more when producers
// race), and a type that comes later compresses alone. A producer that
// invents types does not grow Redis without end.
const (
	dictSamples = 32       // payloads a dictionary is made of, at most
	dictBytes   = 60 << 10 // their bytes, at most (S2 takes 64 KiB)
	dictTypes   = 1000     // task types a client keeps dictionaries for, and a prefix stores
	// MaxPayload bounds the payloads sampled and compressed against a
	// dictionary: a larger one repeats itself enough to compress alone
	MaxPayload = 4 << 10
	dictWait   = 5 * time.Second  // one Redis call of the learner
	dictRetry  = 30 * time.Second // after a failed one
)

// Learner holds a client's dictionaries per task type.
type Learner struct {
	rdb      redis.UniversalClient
	prefix   string
	dicts    *envelope.Dicts // reads stored dictionaries by ID
	maxTypes int             // types a prefix stores dictionaries for
	log      *slog.Logger
	warned   bool // that the prefix holds maxTypes

	mu    sync.Mutex
	types map[string]*learning
}

// learning is one task type's dictionary, or the way to one.
type learning struct {
	dict     *envelope.Dict // ready: stored in Redis and claimed for the type
	full     bool           // the prefix stores dictionaries for maxTypes types: none for this one
	busy     bool           // a lookup or a store runs
	looked   bool           // Redis had no dictionary for the type: learn one
	retryAt  time.Time      // after a failed call, when to try again
	samples  []byte
	nSamples int
}

// New returns the learner of a client of prefix: dicts reads stored
// dictionaries by ID, and log says when the prefix holds dictionaries for
// as many types as it keeps.
func New(rdb redis.UniversalClient, prefix string, dicts *envelope.Dicts, log *slog.Logger) *Learner {
	return &Learner{rdb: rdb, prefix: prefix, dicts: dicts, maxTypes: dictTypes, log: log, types: map[string]*learning{}}
}

func (l *Learner) typesKey() string { return l.prefix + ":dicts" }

// For returns the dictionary to compress a payload of typ against, or
// nil while there is none yet; it may take payload as a sample toward one.
func (l *Learner) For(typ string, payload []byte) *envelope.Dict {
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
	switch {
	case e.dict != nil || e.busy || e.full:
		return e.dict
	case !e.retryAt.IsZero() && time.Now().Before(e.retryAt):
		return nil
	case !e.looked:
		e.busy = true
		go l.lookup(typ, e)
		return nil
	}
	e.samples = append(e.samples, payload...)
	e.nSamples++
	if e.nSamples < dictSamples && len(e.samples) < dictBytes {
		return nil
	}
	sample := e.samples[max(0, len(e.samples)-dictBytes):]
	e.samples, e.nSamples, e.busy = nil, 0, true
	go l.store(typ, e, sample)
	return nil
}

// Set makes d typ's dictionary, ready, as if Redis had named it: the
// protocol's golden vectors fix a dictionary this way (docs/protocol.md).
func (l *Learner) Set(typ string, d *envelope.Dict) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.types[typ] = &learning{dict: d}
}

// claim stores d and claims typ for it, and returns the dictionary the
// type has then: d, or the one another producer claimed first.
func (l *Learner) claim(ctx context.Context, typ string, d *envelope.Dict) (*envelope.Dict, error) {
	// NX: the ID is the content's hash, so a stored one is this one
	if err := l.rdb.SetNX(ctx, envelope.DictKey(l.prefix, d.ID), d.Bytes, 0).Err(); err != nil {
		return nil, err
	}
	won, err := l.rdb.HSetNX(ctx, l.typesKey(), typ, d.ID).Result()
	if err != nil || won {
		return d, err
	}
	d, _, err = l.claimed(typ)
	return d, err
}

// lookup reads the type's dictionary, if Redis has one.
func (l *Learner) lookup(typ string, e *learning) {
	d, found, err := l.claimed(typ)
	l.mu.Lock()
	defer l.mu.Unlock()
	e.busy = false
	switch {
	case err != nil:
		e.retryAt = time.Now().Add(dictRetry)
	case found:
		e.dict = d
	default:
		e.looked = true
	}
}

// claimed returns the dictionary <prefix>:dicts names for typ; found is
// false when it names none.
func (l *Learner) claimed(typ string) (d *envelope.Dict, found bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), dictWait)
	defer cancel()
	id, err := l.rdb.HGet(ctx, l.typesKey(), typ).Result()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	d, err = l.dicts.Get(id)
	return d, err == nil, err
}

// store makes the dictionary of sample, writes it to Redis and claims the
// type for it; only then do payloads use it, so every reader finds it. A
// producer that lost the claim to another uses that one. A failed write
// starts the samples over, later.
func (l *Learner) store(typ string, e *learning, sample []byte) {
	d := envelope.NewDict(sample)
	var err error
	var stored int64
	if d != nil {
		ctx, cancel := context.WithTimeout(context.Background(), dictWait)
		stored, err = l.rdb.HLen(ctx, l.typesKey()).Result()
		if err == nil && stored < int64(l.maxTypes) {
			d, err = l.claim(ctx, typ, d)
		}
		cancel()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.busy = false
	switch {
	case d != nil && err == nil && stored >= int64(l.maxTypes):
		e.full = true
		if !l.warned {
			l.warned = true
			l.log.Warn("compression dictionaries: the prefix stores them for as many task types as it keeps; "+
				"payloads of later types are compressed alone", "types", stored, "type", typ)
		}
	case d != nil && err == nil:
		e.dict = d
	default:
		e.retryAt = time.Now().Add(dictRetry)
	}
}
