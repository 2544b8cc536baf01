package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/shardq/shardq/bench/internal/roundstat"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/sampledoc"
	"github.com/shardq/shardq/queue"
)

// The payloads workload measures what shardq's stored payload forms
// (uncompressed, S2, zstd, encrypted) cost and save with realistic ~1 KB
// JSON documents: Redis bytes per pending task beside the peers, and
// single enqueue, EnqueueMany and processing beside shardq uncompressed.
// It runs only when -only names it: at a million pending tasks for every
// system it takes longer than all the other workloads together.

// The payloads workload's figures, in the order the report prints them.
const (
	figDocEnqRate     = "JSON, enqueue, 1 producer: tasks/s"
	figDocEnqRedis    = "JSON, enqueue: Redis CPU per task, µs"
	figDocEnqClient   = "JSON, enqueue: client CPU per task, µs"
	figDocBatchRate   = "JSON, EnqueueMany by 1000, 1 producer: tasks/s"
	figDocBatchRedis  = "JSON, EnqueueMany: Redis CPU per task, µs"
	figDocBatchClient = "JSON, EnqueueMany: client CPU per task, µs"
	figDocProcRate    = "JSON, process, concurrency 16: tasks/s"
	figDocProcRedis   = "JSON, process: Redis CPU per task, µs"
	figDocProcClient  = "JSON, process: client CPU per task, µs"
)

func figDocMemory(n int) string { return fmt.Sprintf("JSON, memory per pending task at %d: bytes", n) }

// docFigures are the figures measureOne records for the payloads workload.
var docFigures = figureNames{procRate: figDocProcRate, procRedis: figDocProcRedis, procClient: figDocProcClient, memory: figDocMemory}

// The targets: each stored form at most half the best peer's bytes
// per pending task, and at least 0.9× the rates of shardq uncompressed.
const (
	memoryTarget = 0.5
	rateTarget   = 0.9
)

// batchBlock is the EnqueueMany turn, in tasks: ten of shardqSystem.fill's
// batches of 1000.
const batchBlock = 10_000

// shardqForm returns a maker of shardq storing payloads with compression
// c, and encrypted if sealed, named "shardq <form>"; each form has its own
// prefix, so forms taking turns on one Redis keep their own keys.
func shardqForm(form string, c string, sealed bool) func(addr string) (system, error) {
	cfg := queue.Config{Prefix: "shardq-" + strings.ReplaceAll(form, " ", "-"), Compression: c}
	if sealed {
		// a fixed key: the figures are the cipher's cost, not the key's secrecy
		cfg.KeyRing = &queue.KeyRing{Current: "k1", Keys: map[string][]byte{"k1": bytes.Repeat([]byte{0x5a}, 32)}}
	}
	return shardqWith("shardq "+form, cfg)
}

// docMemoryMakers are the systems whose bytes per pending task the
// workload compares: shardq's forms, the smallest of them encrypted, and
// the peers; each form's ratio is to the peer that stores least.
var docMemoryMakers = []func(string) (system, error){
	shardqForm("none", "none", false),
	shardqForm("fast", "fast", false),
	shardqForm("small", "small", false),
	shardqForm("small sealed", "small", true),
	newAsynq,
	newGocraft,
	newGocraftJSON,
}

// docPeers are the peers among docMemoryMakers, by name: gocraft/work
// both as the other workloads drive it and at its smallest for JSON.
var docPeers = []string{"asynq", "gocraft/work", "gocraft/work json"}

// docRateMakers are the forms whose rates and CPU the workload compares
// with the first, shardq uncompressed; encrypted with the default
// compression, as a service turning encryption on would run it.
var docRateMakers = []func(string) (system, error){
	shardqForm("none", "none", false),
	shardqForm("fast", "fast", false),
	shardqForm("small", "small", false),
	shardqForm("fast sealed", "fast", true),
}

// docSeed seeds the documents, so every run, round and system gets the
// same ones.
const docSeed = 20_260_101

// docChunk is how many documents share one block of memory.
const docChunk = 4096

// docSet is the payloads workload's documents: sampledoc's orders as JSON,
// about 1 KB each, every task a different one. They are all made before
// the first measurement, so no timed part makes one, and kept in blocks of
// docChunk, not a million objects for the collector to mark.
type docSet struct {
	docs [][]byte       // task i's document
	ids  map[string]int // task by order ID, for the tasks a handler checks
}

// newDocSet makes n documents, the first checked of them findable by
// index.
func newDocSet(n, checked int) (*docSet, error) {
	r := rand.New(rand.NewPCG(docSeed, docSeed))
	d := &docSet{docs: make([][]byte, 0, n), ids: make(map[string]int, checked)}
	var block []byte
	for i := range n {
		if i%docChunk == 0 {
			block = make([]byte, 0, docChunk*1100)
		}
		start := len(block)
		block = append(block, sampledoc.JSON(r)...)
		// a block that outgrew its capacity moved: earlier views keep
		// the old one, which holds the same bytes
		d.docs = append(d.docs, block[start:len(block):len(block)])
		if i < checked {
			id := orderID(d.docs[i])
			if id == nil {
				return nil, errors.New("a sampledoc document does not open with its order ID")
			}
			if _, dup := d.ids[string(id)]; dup {
				return nil, fmt.Errorf("documents %d and %d share order ID %s", d.ids[string(id)], i, id)
			}
			d.ids[string(id)] = i
		}
	}
	return d, nil
}

func (d *docSet) payloads(from, to int) [][]byte { return d.docs[from:to] }

// index finds the task by the order ID its document opens with, and checks
// that the handler got that document byte for byte: decompressed and
// decrypted right.
func (d *docSet) index(p []byte) int {
	i, ok := d.ids[string(orderID(p))]
	if !ok || !bytes.Equal(p, d.docs[i]) {
		return -1
	}
	return i
}

// sizes reports the documents' mean, least and largest length.
func (d *docSet) sizes() (mean float64, least, most int) {
	least, most = len(d.docs[0]), 0
	total := 0
	for _, p := range d.docs {
		total += len(p)
		least, most = min(least, len(p)), max(most, len(p))
	}
	return float64(total) / float64(len(d.docs)), least, most
}

// orderIDField opens every sampledoc document: its order ID comes first.
var orderIDField = []byte(`{"order_id":"`)

// orderID is the order ID p opens with, or nil.
func orderID(p []byte) []byte {
	rest, ok := bytes.CutPrefix(p, orderIDField)
	if !ok {
		return nil
	}
	id, _, ok := bytes.Cut(rest, []byte{'"'})
	if !ok {
		return nil
	}
	return id
}

// docCount is how many documents a run of sz needs: one per task of its
// largest fill.
func docCount(sz sizes) int {
	return max(slices.Max(sz.memory), sz.process, sz.batch, sz.enqueues)
}

// docRun is what every round of the payloads workload shares: the
// documents, and the names of docMemoryMakers' and docRateMakers' systems.
type docRun struct {
	docs      *docSet
	memNames  []string
	rateNames []string
}

// systems is every system's name, once.
func (d docRun) systems() []string {
	names := slices.Clone(d.memNames)
	for _, s := range d.rateNames {
		if !slices.Contains(names, s) {
			names = append(names, s)
		}
	}
	return names
}

// turnFigures are the figures of one measureDocTurns.
type turnFigures struct{ rate, redis, client string }

var (
	enqueueFigures = turnFigures{figDocEnqRate, figDocEnqRedis, figDocEnqClient}
	batchFigures   = turnFigures{figDocBatchRate, figDocBatchRedis, figDocBatchClient}
)

// measurePayloadsAll runs a round of the payloads workload: memory for
// every docMemoryMakers system, then single enqueue and EnqueueMany for
// the docRateMakers forms in turns, then processing for each of them.
// One system's failure costs its figure of this round, not the run.
func measurePayloadsAll(ctx context.Context, st stats, addr string, sz sizes, d docRun, round, rounds int, res *results, progress func(string, ...any)) error {
	each := func(w string, makers []func(string) (system, error), names []string, figs []string) error {
		for k := range makers {
			// rotate the systems' order each round, so none always runs first
			i := (k + round) % len(makers)
			progress("round %d/%d: payloads: %s: %s", round+1, rounds, w, names[i])
			if err := measureOne(ctx, st, makers[i], addr, w, sz, d.docs, docFigures, res); err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("payloads, %s, %s: %w", w, names[i], err)
				}
				for _, fig := range figs {
					res.fail(fig, names[i], err)
				}
				progress("  payloads: %s: %s failed: %v", w, names[i], err)
				if err := st.rdb.FlushAll(ctx).Err(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var memFigs []string
	for _, n := range sz.memory {
		memFigs = append(memFigs, figDocMemory(n))
	}
	if err := each("memory", docMemoryMakers, d.memNames, memFigs); err != nil {
		return err
	}

	forms := strings.Join(d.rateNames, ", ")
	progress("round %d/%d: payloads: enqueue: %s, in turns of %d", round+1, rounds, forms, enqueueBlock)
	single := func(s system, ps [][]byte) error {
		for _, p := range ps {
			if err := s.enqueue(ctx, p); err != nil {
				return err
			}
		}
		return nil
	}
	if err := measureDocTurns(ctx, st, addr, d.docs, sz.enqueues, enqueueBlock, 200, round, single, res, enqueueFigures); err != nil {
		return fmt.Errorf("payloads, enqueue: %w", err)
	}
	progress("round %d/%d: payloads: EnqueueMany: %s, in turns of %d", round+1, rounds, forms, batchBlock)
	batch := func(s system, ps [][]byte) error { return s.fill(ctx, ps) }
	if err := measureDocTurns(ctx, st, addr, d.docs, sz.batch, batchBlock, 1000, round, batch, res, batchFigures); err != nil {
		return fmt.Errorf("payloads, EnqueueMany: %w", err)
	}

	return each("process", docRateMakers, d.rateNames, []string{figDocProcRate})
}

// measureDocTurns measures the docRateMakers forms taking turns (see
// takeTurns) on an empty Redis, each enqueueing total documents by
// enqueue, after a warm-up of the first warm, and records each form's
// rate, Redis CPU and client CPU per task as figs names them.
func measureDocTurns(ctx context.Context, st stats, addr string, docs *docSet, total, block, warm, round int, enqueue func(s system, ps [][]byte) error, res *results, figs turnFigures) error {
	if err := st.rdb.FlushAll(ctx).Err(); err != nil {
		return err
	}
	var systems []system
	defer func() { closeSystems(systems) }()
	for _, mk := range docRateMakers {
		s, err := mk(addr)
		if err != nil {
			return err
		}
		systems = append(systems, s)
	}
	errs := make([]error, len(systems))
	for i, s := range systems {
		// warm up: connections dialled, scripts loaded, compressors made
		// (those documents go twice, which no figure here minds)
		errs[i] = enqueue(s, docs.payloads(0, warm))
	}
	rs, errs := takeTurns(ctx, st, errs, total, block, round, func(i, from, n int) error {
		return enqueue(systems[i], docs.payloads(from, from+n))
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for i, s := range systems {
		if errs[i] != nil {
			res.fail(figs.rate, s.name(), errs[i])
			continue
		}
		res.add(figs.rate, s.name(), rs[i].rate)
		res.add(figs.redis, s.name(), rs[i].redisUS)
		res.add(figs.client, s.name(), rs[i].clientUS)
	}
	return st.rdb.FlushAll(ctx).Err()
}

// reportPayloads prints the payloads workload's two tables: bytes per
// pending task of every system, with each shardq form's over the best
// peer's; and the forms' rates and CPU, with each form's over shardq
// uncompressed's. Then whether each form meets the targets.
func reportPayloads(w io.Writer, r *results, sz sizes, o options, d docRun, redisVersion string) {
	mean, least, most := d.docs.sizes()
	fmt.Fprintf(w, "\nshardq's stored payload forms and its peers, ~1 KB JSON documents, %d round(s), interleaved, one private redis-server %s; %s; %s\n",
		o.rounds, redisVersion, machine(), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "documents: sampledoc's orders as JSON, every task a different one, %.0f bytes on average (%d–%d); memory at %v pending; %d single enqueues from 1 producer in turns of %d, %d by EnqueueMany in batches of 1000 in turns of %d; %d processed at concurrency %d, the handler checking each payload; shardq compresses from %d bytes; sealed: AES-256-GCM under a KeyRing; gocraft/work takes each document as a string argument, as in the other workloads, and (json) as a JSON argument, unescaped\n\n",
		mean, least, most, sz.memory, sz.enqueues, enqueueBlock, sz.batch, batchBlock, sz.process, sz.concurrency, config.DefaultCompressAbove)

	forms := slices.DeleteFunc(slices.Clone(d.memNames), func(s string) bool { return slices.Contains(docPeers, s) })
	head := "| figure | " + strings.Join(d.memNames, " | ") + " | best peer"
	for _, s := range forms {
		head += " | " + s + " ÷ best peer"
	}
	fmt.Fprintln(w, head+" |")
	fmt.Fprintln(w, "| --- |"+strings.Repeat(" --- |", len(d.memNames)+1+len(forms)))
	for _, n := range sz.memory {
		fig := figDocMemory(n)
		best := bestPeer(r, fig)
		row := "| " + fig + cells(r, fig, d.memNames) + " | " + cmp.Or(best, "–")
		for _, s := range forms {
			row += " | " + ratioCell(r, fig, s, best)
		}
		fmt.Fprintln(w, row+" |")
	}

	base := d.rateNames[0]
	head = "| figure | " + strings.Join(d.rateNames, " | ")
	for _, s := range d.rateNames[1:] {
		head += " | " + s + " ÷ " + base
	}
	fmt.Fprintln(w, "\n"+head+" |")
	fmt.Fprintln(w, "| --- |"+strings.Repeat(" --- |", 2*len(d.rateNames)-1))
	if lim := r.vals[figLimit]["redis"]; len(lim) > 0 {
		fmt.Fprintf(w, "| %s | %s |%s\n", figLimit, cell(lim), strings.Repeat(" |", 2*len(d.rateNames)-2))
	}
	for _, fig := range []string{figDocEnqRate, figDocEnqRedis, figDocEnqClient, figDocBatchRate, figDocBatchRedis, figDocBatchClient, figDocProcRate, figDocProcRedis, figDocProcClient} {
		row := "| " + fig + cells(r, fig, d.rateNames)
		for _, s := range d.rateNames[1:] {
			row += " | " + ratioCell(r, fig, s, base)
		}
		fmt.Fprintln(w, row+" |")
	}

	fmt.Fprintf(w, "\ntarget, memory at most %.2f× the best peer's at every size:", memoryTarget)
	for _, s := range forms {
		var got []string
		met := true
		for _, n := range sz.memory {
			fig := figDocMemory(n)
			v, ok := ratio(r, fig, s, bestPeer(r, fig))
			met = met && ok && v <= memoryTarget
			got = append(got, fmt.Sprintf("%s at %d", ratioText(v, ok), n))
		}
		fmt.Fprintf(w, " %s %s (%s);", s, metOrMissed(met), strings.Join(got, ", "))
	}
	fmt.Fprintf(w, "\ntarget, rates at least %.2f× %s's:", rateTarget, base)
	rates := []struct{ what, fig string }{{"enqueue", figDocEnqRate}, {"EnqueueMany", figDocBatchRate}, {"process", figDocProcRate}}
	for _, s := range d.rateNames[1:] {
		var got []string
		met := true
		for _, f := range rates {
			v, ok := ratio(r, f.fig, s, base)
			met = met && ok && v >= rateTarget
			got = append(got, f.what+" "+ratioText(v, ok))
		}
		fmt.Fprintf(w, " %s %s (%s);", s, metOrMissed(met), strings.Join(got, ", "))
	}
	fmt.Fprintln(w)
	printFailures(w, r)
}

// bestPeer is the peer with the smallest median of fig, among those with
// a figure every round; "" if none has.
func bestPeer(r *results, fig string) string {
	best := ""
	for _, p := range docPeers {
		v := r.vals[fig][p]
		if len(v) == 0 || len(r.fails[fig][p]) > 0 {
			continue
		}
		if best == "" || roundstat.Median(v) < roundstat.Median(r.vals[fig][best]) {
			best = p
		}
	}
	return best
}

func metOrMissed(met bool) string {
	if met {
		return "met"
	}
	return "missed"
}
