package envelope

import (
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/s2"

	"github.com/shardq/shardq/internal/sampledoc"
)

// BenchmarkCodec measures the client CPU of storing and reading one ~1 KB
// JSON document under each setting, and reports the stored bytes per
// document as a ratio to the document's own ("stored/doc").
//
//	go test -run '^$' -bench Codec ./internal/envelope
func BenchmarkCodec(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 11))
	docs := make([][]byte, 512)
	total := 0
	for i := range docs {
		docs[i] = sampledoc.JSON(r)
		total += len(docs[i])
	}
	b.Run("wrap/s2-dictionary", func(b *testing.B) {
		// not a setting: what an S2 dictionary of 60 other orders would
		// give, for BENCHMARKS.md "Next"
		var sample []byte
		for range 60 {
			sample = append(sample, sampledoc.JSON(r)...)
		}
		d := s2.MakeDict(sample[max(0, len(sample)-64<<10):], nil)
		size := 0
		for _, doc := range docs {
			size += len(d.Encode(nil, doc))
		}
		b.SetBytes(int64(total / len(docs)))
		buf := make([]byte, 0, 4096)
		i := 0
		for b.Loop() {
			buf = d.Encode(buf[:0], docs[i%len(docs)])
			i++
		}
		b.ReportMetric(float64(size)/float64(total), "stored/doc")
	})
	ring := &KeyRing{Current: "k1", Keys: map[string][]byte{"k1": make([]byte, 32)}}
	for _, c := range []struct {
		name  string
		codec *Codec
	}{
		{"none", &Codec{Compression: None, Above: 512}},
		{"fast", &Codec{Compression: Fast, Above: 512}},
		{"small", &Codec{Compression: Small, Above: 512}},
		{"fast+sealed", &Codec{Compression: Fast, Above: 512, Ring: ring}},
		{"small+sealed", &Codec{Compression: Small, Above: 512, Ring: ring}},
	} {
		stored := make([][]byte, len(docs))
		size := 0
		for i, d := range docs {
			w, err := c.codec.Wrap(nil, d, "0123456789abcdef", Payload)
			if err != nil {
				b.Fatal(err)
			}
			stored[i] = w
			size += len(w)
		}
		b.Run("wrap/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(total / len(docs)))
			i := 0
			for b.Loop() {
				if _, err := c.codec.Wrap(nil, docs[i%len(docs)], "0123456789abcdef", Payload); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(size)/float64(total), "stored/doc")
		})
		b.Run("open/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(total / len(docs)))
			i := 0
			for b.Loop() {
				if _, err := c.codec.Open(stored[i%len(stored)], "0123456789abcdef", Payload, 1<<20); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
