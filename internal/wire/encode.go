package wire

import (
	"encoding/binary"
	"math"
	"slices"
)

// appendMessage appends m's msgpack array to b. It writes what
// EncodeMsgpack writes (shortest forms), without an encoder or buffer
// growth: enqueue encodes every task, so this path is worth its 40 lines.
func appendMessage(b []byte, m *Message) []byte {
	n := m.fieldCount()
	b = append(b, 0x90|byte(n)) // fixarray: at most 13 fields
	b = appendString(b, m.ID)
	b = appendString(b, m.Key)
	b = appendString(b, m.Type)
	for f := 4; f <= n; f++ {
		switch f {
		case 4:
			b = appendBin(b, m.Payload)
		case 5:
			if m.Raw {
				b = append(b, 0xc3)
			} else {
				b = append(b, 0xc2)
			}
		case 6:
			b = appendInt(b, int64(m.MaxRetry))
		case 7:
			b = appendInt(b, m.Timeout)
		case 8:
			b = appendInt(b, m.Deadline)
		case 9:
			b = appendInt(b, m.Retention)
		case 10:
			b = appendString(b, m.Unique)
		case 11:
			b = appendInt(b, m.storedEnqueuedAt())
		}
	}
	if n < 12 {
		return b
	}
	switch n := len(m.Headers); {
	case n < 16:
		b = append(b, 0x80|byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xde), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdf), uint32(n))
	}
	for _, k := range sortedKeys(m.Headers) { // sorted: one encoding per message
		b = appendString(appendString(b, k), m.Headers[k])
	}
	if m.Flow != "" {
		b = appendString(b, m.Flow)
	}
	return b
}

// appendCompact appends m's compact form (see Message): the header that
// says the payload's kind, the ID and the type, then the payload as it is.
func appendCompact(b []byte, m *Message) []byte {
	return append(appendCompactHead(b, m), m.Payload...)
}

// appendCompactHead appends what comes before the payload in m's compact
// form.
func appendCompactHead(b []byte, m *Message) []byte {
	if m.Raw {
		b = append(b, compactRaw)
	} else {
		b = append(b, compactMsgpack)
	}
	b = appendString(b, m.ID)
	return appendString(b, m.Type)
}

func sortedKeys(h map[string]string) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendString(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

func appendBin(b []byte, p []byte) []byte {
	switch n := len(p); {
	case n <= math.MaxUint8:
		b = append(b, 0xc4, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xc5), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xc6), uint32(n))
	}
	return append(b, p...)
}

func appendInt(b []byte, n int64) []byte {
	switch {
	case n >= 0 && n < 128:
		return append(b, byte(n))
	case n < 0 && n >= -32:
		return append(b, byte(n))
	case n >= 0 && n <= math.MaxUint8:
		return append(b, 0xcc, byte(n))
	case n >= 0 && n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n >= 0 && n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	case n >= 0:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
	}
}
