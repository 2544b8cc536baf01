package envelope

import (
	"bytes"
	"errors"
	"testing"
)

// The fuzz targets of the envelope: every codec's Open, with a key ring
// and without, sealed values and not, and Wrap then Open. Seeds are f.Add
// calls here and files under testdata/fuzz/<name> (the attack inputs:
// a zstd body of two frames whose second holds 1 MiB of zeros, an S2 body
// that claims more than the limit, an encrypted value whose flag was
// cleared).

// fuzzRing is the ring the fuzz targets seal with.
var fuzzRing = &KeyRing{Current: "k1", Keys: map[string][]byte{"k1": key(1), "k2": key(2)}}

// fuzzLimit bounds what Open may return in the fuzz targets.
const fuzzLimit = 64 << 10

// fuzzDict is a dictionary the fuzz targets' codecs find.
var fuzzDict = func() *Dict {
	var sample []byte
	for i := range 40 {
		sample = append(sample, doc(700+i)...)
	}
	return NewDict(sample)
}()

// fuzzCodecs are the readers Open is fuzzed with: no ring, a ring, a ring
// that allows plaintext; each finds fuzzDict.
func fuzzCodecs() []*Codec {
	dicts := func() *Dicts {
		return &Dicts{Load: func(id string) ([]byte, error) {
			if id == fuzzDict.ID {
				return fuzzDict.Bytes, nil
			}
			return nil, nil
		}}
	}
	return []*Codec{{Dicts: dicts()}, {Ring: fuzzRing, Dicts: dicts()}, {Ring: fuzzRing, AllowPlain: true, Dicts: dicts()}}
}

// FuzzOpen: Open of any bytes, by every reader, for every use, returns at
// most the limit or an error of its own; never a panic, never more.
func FuzzOpen(f *testing.F) {
	for _, c := range []*Codec{{Compression: Fast, Above: 1}, {Compression: Small, Above: 1}, {Compression: None},
		{Compression: Fast, Above: 1, Ring: fuzzRing}, {Compression: Small, Above: 1, Ring: fuzzRing}, {Ring: fuzzRing}} {
		for _, v := range [][]byte{doc(300), doc(3000), {Magic}, nil} {
			w, _ := c.Wrap(nil, v, "id", Payload)
			f.Add(w, byte(Payload))
		}
	}
	w, _ := (&Codec{Compression: Fast, Above: 1}).WrapDict(nil, doc(900), fuzzDict, "id", Payload)
	f.Add(w, byte(Payload))
	f.Add(zstdFrames(f, []byte("hello"), 1<<20), byte(Payload))
	sealedW, _ := (&Codec{Ring: fuzzRing}).Wrap(nil, []byte("transfer 100 to alice"), "id", Result)
	downgraded := append([]byte(nil), sealedW...)
	downgraded[1] = 0
	f.Add(downgraded, byte(Result))
	f.Add([]byte{Magic, codecS2, 0xff, 0xff, 0xff, 0x7f}, byte(Payload))
	f.Add([]byte{Magic, encrypted, 0}, byte(Step))
	f.Fuzz(func(t *testing.T, b []byte, use byte) {
		u := Use(use%5 + 1)
		for i, c := range fuzzCodecs() {
			out, err := c.Open(b, "id", u, fuzzLimit)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrUnknownKey) &&
					!errors.Is(err, ErrPlaintext) && !errors.Is(err, ErrNoDict) && !errors.Is(err, ErrDictUnavailable) {
					t.Fatalf("reader %d: an error of no sentinel: %v", i, err)
				}
				continue
			}
			if len(out) > fuzzLimit {
				t.Fatalf("reader %d: %d bytes, limit %d", i, len(out), fuzzLimit)
			}
			if i == 1 && u != Error && !sealed(b) {
				t.Fatalf("a ring without AllowPlain opened a value that is not sealed: % x", b[:min(len(b), 8)])
			}
			if !Wrapped(b) && !bytes.Equal(out, b) {
				t.Fatalf("reader %d changed a plain value", i)
			}
		}
		// no limit named: DefaultLimit bounds it all the same
		if out, err := fuzzCodecs()[0].Open(b, "id", u, 0); err == nil && len(out) > DefaultLimit {
			t.Fatalf("no limit: %d bytes, DefaultLimit %d", len(out), DefaultLimit)
		}
	})
}

// FuzzWrapOpen: what Wrap stores, with any compression, threshold and
// ring, Open gives back exactly, for the same task and use only.
func FuzzWrapOpen(f *testing.F) {
	f.Add(doc(700), byte(0), uint16(512), true, false)
	f.Add(doc(100), byte(1), uint16(1), false, true)
	f.Add([]byte{Magic, 0, 1}, byte(2), uint16(0), false, false)
	f.Add(doc(900), byte(0), uint16(1), false, true)
	f.Fuzz(func(t *testing.T, v []byte, comp byte, above uint16, ring, dict bool) {
		c := &Codec{Compression: Compression(comp % 3), Above: int(above), Dicts: fuzzCodecs()[0].Dicts}
		if ring {
			c.Ring = fuzzRing
		}
		var w []byte
		var err error
		if dict {
			w, err = c.WrapDict(nil, v, fuzzDict, "id", Step)
		} else {
			w, err = c.Wrap(nil, v, "id", Step)
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(w) > c.MaxSize(len(v)) && !dict {
			t.Fatalf("%d bytes stored, MaxSize says %d", len(w), c.MaxSize(len(v)))
		}
		got, err := c.Open(w, "id", Step, len(v)+1)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("Open(Wrap(%d bytes)) = %d bytes, %v", len(v), len(got), err)
		}
		if ring {
			if _, err := c.Open(w, "id2", Step, len(v)+1); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("opened as another task's: %v", err)
			}
			if _, err := c.Open(w, "id", Payload, len(v)+1); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("opened as another use: %v", err)
			}
		}
	})
}
