package wire

import "math"

// decodeFast reads a message in exactly the layout appendCompact or
// appendMessage writes (3 to 13 fields, shortest forms), straight from
// its bytes. It reports false on anything else, and DecodeMessage then
// falls back to the general decoder: every message a worker runs passes
// here, so it skips the decoder's allocations.
// Over a string (a message as go-redis returns it) the string fields are
// substrings of it, not copies.
func decodeFast[T string | []byte](b T, m *Message) bool {
	if len(b) > 0 && (b[0] == compactMsgpack || b[0] == compactRaw) {
		return decodeCompact(b, m)
	}
	// a fixarray of 3 to 13 fields: what appendMessage writes
	if len(b) == 0 || b[0] < 0x93 || b[0] > 0x9d {
		return false
	}
	n := int(b[0] - 0x90)
	r := reader[T]{b: b, i: 1, ok: true}
	*m = Message{}
	m.ID = r.str()
	m.Key = r.str()
	m.Type = r.str()
	for f := 4; f <= n && r.ok; f++ {
		switch f {
		case 4:
			m.Payload = r.bin()
		case 5:
			m.Raw = r.boolean()
		case 6:
			m.MaxRetry = int(r.int())
		case 7:
			m.Timeout = r.int()
		case 8:
			m.Deadline = r.int()
		case 9:
			m.Retention = r.int()
		case 10:
			m.Unique = r.str()
		case 11:
			m.EnqueuedAt = r.int()
		case 12:
			k := r.length(r.byte1(), 0x80, 0x0f, 0xc1, 0xde, 0xdf) // 0xc1: no map8 in msgpack
			if k > (len(r.b)-r.i)/2 {
				r.ok = false // more headers than bytes: each takes two at least
			}
			if r.ok && k > 0 {
				m.Headers = make(map[string]string, k)
				for range k {
					key := r.str()
					m.Headers[key] = r.str()
				}
			}
		case 13:
			m.Flow = r.str()
		}
	}
	m.deriveEnqueuedAt()
	return r.ok && r.i == len(b)
}

// decodeCompact reads a message in the compact form appendCompact writes:
// the fields it leaves out are zero but MaxRetry, which is
// CompactMaxRetry.
func decodeCompact[T string | []byte](b T, m *Message) bool {
	r := reader[T]{b: b, i: 1, ok: true}
	*m = Message{Raw: b[0] == compactRaw, MaxRetry: CompactMaxRetry}
	m.ID = r.str()
	m.Type = r.str()
	if !r.ok {
		return false
	}
	if rest := b[r.i:]; len(rest) > 0 {
		m.Payload = append(make([]byte, 0, len(rest)), rest...)
	}
	m.deriveEnqueuedAt()
	return true
}

// reader walks msgpack values; any surprise clears ok.
type reader[T string | []byte] struct {
	b  T
	i  int
	ok bool
}

func (r *reader[T]) take(n int) T {
	if !r.ok || n < 0 || r.i+n > len(r.b) {
		r.ok = false
		var zero T
		return zero
	}
	s := r.b[r.i : r.i+n]
	r.i += n
	return s
}

func (r *reader[T]) byte1() byte {
	s := r.take(1)
	if !r.ok {
		return 0
	}
	return s[0]
}

func (r *reader[T]) length(code byte, fix, fixMask, l8, l16, l32 byte) int {
	switch {
	case fixMask != 0 && code&^fixMask == fix:
		return int(code & fixMask)
	case code == l8:
		return int(r.byte1())
	case code == l16:
		if s := r.take(2); r.ok {
			return int(s[0])<<8 | int(s[1])
		}
	case code == l32:
		if s := r.take(4); r.ok {
			return int(s[0])<<24 | int(s[1])<<16 | int(s[2])<<8 | int(s[3])
		}
	}
	r.ok = false
	return 0
}

func (r *reader[T]) str() string {
	n := r.length(r.byte1(), 0xa0, 0x1f, 0xd9, 0xda, 0xdb)
	return string(r.take(n))
}

func (r *reader[T]) bin() []byte {
	n := r.length(r.byte1(), 0, 0, 0xc4, 0xc5, 0xc6)
	s := r.take(n)
	if !r.ok || len(s) == 0 {
		return nil
	}
	return append(make([]byte, 0, len(s)), s...)
}

func (r *reader[T]) boolean() bool {
	switch r.byte1() {
	case 0xc3:
		return true
	case 0xc2:
		return false
	}
	r.ok = false
	return false
}

func (r *reader[T]) int() int64 {
	c := r.byte1()
	switch {
	case c <= 0x7f:
		return int64(c)
	case c >= 0xe0:
		return int64(int8(c))
	}
	var size int
	switch c {
	case 0xcc, 0xd0:
		size = 1
	case 0xcd, 0xd1:
		size = 2
	case 0xce, 0xd2:
		size = 4
	case 0xcf, 0xd3:
		size = 8
	default:
		r.ok = false
		return 0
	}
	s := r.take(size)
	if !r.ok {
		return 0
	}
	var u uint64
	for i := range len(s) {
		u = u<<8 | uint64(s[i])
	}
	if c >= 0xd0 { // signed: sign-extend from size bytes
		shift := 64 - 8*size
		return int64(u<<shift) >> shift
	}
	if u > math.MaxInt64 {
		r.ok = false
	}
	return int64(u)
}
