package envelope

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
)

// zstdFrames returns a zstd envelope whose body is a frame of first, then
// a frame of n zero bytes: as the envelope stores it, the first frame
// without its magic.
func zstdFrames(t testing.TB, first []byte, n int) []byte {
	t.Helper()
	enc := zstdCodec().enc // as Wrap writes them: with their content size
	a := enc.EncodeAll(first, nil)
	b := enc.EncodeAll(make([]byte, n), nil)
	return append(append([]byte{Magic, codecZstd}, a[len(zstdMagic):]...), b...)
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestZstdFramesBounded: a zstd body of two frames, the second holding
// 64 MiB of zeros (a few KB stored), once opened to all 64 MiB: only the
// first frame's size was checked against the limit. Now what every frame
// holds counts, and a body that would grow past the limit is ErrTooLarge,
// having allocated next to nothing. Frames that fit the limit together
// still open.
func TestZstdFramesBounded(t *testing.T) {
	const limit = 1 << 20
	bomb := zstdFrames(t, []byte("hello"), 64<<20)
	if len(bomb) > 64<<10 {
		t.Fatalf("the bomb is %d bytes stored", len(bomb))
	}
	c := &Codec{}
	var err error
	var out []byte
	if n := allocated(func() { out, err = c.Open(bomb, "id", Payload, limit) }); n > 4*limit {
		t.Errorf("Open allocated %d bytes", n)
	}
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "limit 1048576") {
		t.Fatalf("Open = %d bytes, %v; want ErrTooLarge", len(out), err)
	}
	// two frames within the limit together
	two := zstdFrames(t, []byte("hello"), 1000)
	if out, err := c.Open(two, "id", Payload, limit); err != nil || len(out) != 1005 || string(out[:5]) != "hello" {
		t.Fatalf("two small frames: %d bytes, %v", len(out), err)
	}
	if _, err := c.Open(two, "id", Payload, 1004); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("two frames one byte past the limit: %v", err)
	}
	// sealed, the same
	ring := &KeyRing{Current: "k", Keys: map[string][]byte{"k": key(1)}}
	sc := &Codec{Ring: ring}
	sealedBomb := sealBody(t, sc, bomb[2:], codecZstd, "id", Payload)
	if _, err := sc.Open(sealedBomb, "id", Payload, limit); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("sealed: %v", err)
	}
}

// sealBody seals body, already compressed with codec, as Wrap would.
func sealBody(t testing.TB, c *Codec, body []byte, codec byte, id string, u Use) []byte {
	t.Helper()
	key, kid := c.Ring.current()
	flags := codec | encrypted
	out := append([]byte{Magic, flags, byte(len(kid))}, kid...)
	nonce := bytes.Repeat([]byte{7}, NonceSize)
	out = append(out, nonce...)
	return key.Seal(out, nonce, body, aad(id, u, flags))
}

// TestS2Bounded: an S2 body states its decoded length, which is checked
// before it is decoded, with a dictionary or without.
func TestS2Bounded(t *testing.T) {
	body := s2.Encode(nil, make([]byte, 8<<20))
	c := &Codec{}
	var err error
	if n := allocated(func() { _, err = c.Open(append([]byte{Magic, codecS2}, body...), "id", Payload, 1<<20) }); n > 1<<20 {
		t.Errorf("Open allocated %d bytes", n)
	}
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("s2: %v", err)
	}
	var sample []byte
	for i := range 40 {
		sample = append(sample, doc(700+i)...)
	}
	d := NewDict(sample)
	dc := &Codec{Dicts: &Dicts{Load: func(string) ([]byte, error) { return d.Bytes, nil }}}
	w := append(append([]byte{Magic, codecDict}, d.raw[:]...), d.d.Encode(nil, make([]byte, 8<<20))...)
	if _, err := dc.Open(w, "id", Payload, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("s2 against a dictionary: %v", err)
	}
}

// TestDowngradeRefused: with a key ring, a value that is not encrypted is
// ErrPlaintext: one whose encrypted flag was cleared in Redis (before, its
// ciphertext came back as the value), a plain value, one compressed
// alone or against a dictionary. AllowPlain accepts them, as during a
// migration to encryption; errors are exempt. A sealed value whose
// compression bits were changed does not authenticate (before, S2 bytes
// came back as the value).
func TestDowngradeRefused(t *testing.T) {
	ring := &KeyRing{Current: "k1", Keys: map[string][]byte{"k1": key(1)}}
	c := &Codec{Compression: Fast, Above: 512, Ring: ring}
	secret := []byte("transfer 100 to alice")
	w, err := c.Wrap(nil, secret, "id", Payload)
	if err != nil || w[1] != encrypted {
		t.Fatalf("Wrap: % x, %v", w[:2], err)
	}
	downgraded := append([]byte(nil), w...)
	downgraded[1] = 0
	zipped, _ := (&Codec{Above: 1}).Wrap(nil, doc(3000), "id", Payload)
	for name, b := range map[string][]byte{"flag cleared": downgraded, "plain": secret, "compressed": zipped} {
		if got, err := c.Open(b, "id", Payload, 0); !errors.Is(err, ErrPlaintext) || !strings.Contains(err.Error(), "AllowPlaintext") {
			t.Errorf("%s: Open = %q, %v; want ErrPlaintext", name, got, err)
		}
		allow := &Codec{Ring: ring, AllowPlain: true}
		if _, err := allow.Open(b, "id", Payload, 0); err != nil {
			t.Errorf("%s with AllowPlain: %v", name, err)
		}
	}
	if got, err := c.Open([]byte("plain error"), "id", Error, 0); err != nil || string(got) != "plain error" {
		t.Errorf("a plain error: %q, %v", got, err)
	}
	// the compression bits are authenticated
	big, err := c.Wrap(nil, doc(3000), "id", Payload)
	if err != nil || big[1] != encrypted|codecS2 {
		t.Fatalf("Wrap of a large value: flags %#x, %v", big[1], err)
	}
	for name, flags := range map[string]byte{"s2 bit cleared": encrypted, "zstd for s2": encrypted | codecZstd} {
		b := append([]byte(nil), big...)
		b[1] = flags
		if got, err := c.Open(b, "id", Payload, 0); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "does not authenticate") {
			t.Errorf("%s: Open = %d bytes, %v; want ErrCorrupt", name, len(got), err)
		}
	}
	small := append([]byte(nil), w...)
	small[1] = encrypted | codecS2
	if _, err := c.Open(small, "id", Payload, 0); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "does not authenticate") {
		t.Errorf("s2 bit set: %v", err)
	}
}

// TestZstdSmallValues: the zstd encoder states no content size for a
// frame of under 256 bytes, which Open once refused as corrupt: with
// Compression "small" and a CompressAbove under 256, such values did not open
// and their tasks went to dead. They open, within the limit.
func TestZstdSmallValues(t *testing.T) {
	for _, ring := range []*KeyRing{nil, {Current: "k", Keys: map[string][]byte{"k": key(1)}}} {
		c := &Codec{Compression: Small, Above: 1, Ring: ring}
		for _, n := range []int{20, 100, 255, 256, 300} {
			v := doc(n)
			w, err := c.Wrap(nil, v, "id", Payload)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := c.Open(w, "id", Payload, 1<<20); err != nil || !bytes.Equal(got, v) {
				t.Errorf("%d bytes, ring %v: %v", n, ring != nil, err)
			}
		}
	}
	w, _ := (&Codec{Compression: Small, Above: 1}).Wrap(nil, doc(200), "id", Payload)
	if w[1] != codecZstd {
		t.Fatalf("a 200-byte document was not compressed: flags %#x", w[1])
	}
	// past the limit within a block, zstd cannot tell it from corrupt
	if _, err := (&Codec{}).Open(w, "id", Payload, 199); !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrCorrupt) {
		t.Fatalf("past the limit: %v", err)
	}
}

// TestOpenWithoutLimitIsBounded: a caller that names no limit (0 or
// less) gets DefaultLimit, not an unbounded decoder: a zstd bomb and an
// S2 body past DefaultLimit are ErrTooLarge naming it, with little
// allocated, and a body of exactly DefaultLimit opens.
func TestOpenWithoutLimitIsBounded(t *testing.T) {
	c := &Codec{Compression: Fast, Above: 1}
	bomb := zstdFrames(t, []byte("hello"), 64<<20)
	for _, limit := range []int{0, -1} {
		var err error
		if n := allocated(func() { _, err = c.Open(bomb, "id", Payload, limit) }); n > 4*DefaultLimit {
			t.Errorf("limit %d: Open allocated %d bytes", limit, n)
		}
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprint("limit ", DefaultLimit)) {
			t.Fatalf("limit %d, zstd bomb: %v; want ErrTooLarge at DefaultLimit", limit, err)
		}
	}
	over, err := c.Wrap(nil, make([]byte, DefaultLimit+1), "id", Payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(over, "id", Payload, 0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("S2 body of DefaultLimit+1 bytes with no limit: %v; want ErrTooLarge", err)
	}
	fits, err := c.Wrap(nil, make([]byte, DefaultLimit), "id", Payload)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := c.Open(fits, "id", Payload, 0); err != nil || len(out) != DefaultLimit {
		t.Fatalf("S2 body of DefaultLimit bytes with no limit: %d bytes, %v", len(out), err)
	}
}
