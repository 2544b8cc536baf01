package wire

import (
	"math/rand/v2"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/shardq/shardq/internal/sampledoc"
)

// BenchmarkCheck measures what the walk a worker makes of every msgpack
// payload (newTask) costs beside a decode of the same payload into
// map[string]any, as a handler's Task.Decode makes: a small payload of
// three fields and a ~1 KB order document. The decode reports check-x,
// the walk's time over its own, measured just before in the same run.
func BenchmarkCheck(b *testing.B) {
	small, _ := msgpack.Marshal(map[string]any{"user": 42, "email": "ada@example.com", "plan": "pro"})
	order, _ := msgpack.Marshal(sampledoc.New(rand.New(rand.NewPCG(1, 2))))
	for _, c := range []struct {
		name string
		b    []byte
	}{{"small", small}, {"order", order}} {
		var check float64 // ns a walk of c.b takes, for decode's check-x
		b.Run(c.name+"/check", func(b *testing.B) {
			b.SetBytes(int64(len(c.b)))
			for b.Loop() {
				if err := Check(c.b); err != nil {
					b.Fatal(err)
				}
			}
			check = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		})
		b.Run(c.name+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(c.b)))
			for b.Loop() {
				var v map[string]any
				if err := msgpack.Unmarshal(c.b, &v); err != nil { // wire:unchecked: Check's peer in this benchmark
					b.Fatal(err)
				}
			}
			b.ReportMetric(check/(float64(b.Elapsed().Nanoseconds())/float64(b.N)), "check-x")
		})
	}
}
