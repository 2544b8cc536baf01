package wire

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"time"
)

// idEncoding is base32 with the lowercase "extended hex" alphabet, which
// keeps the byte order: IDs sort by creation time.
var idEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// NewID returns a new task ID: 20 characters holding 48 bits of unix
// milliseconds then 52 random bits (the layout of a UUIDv7, shortened),
// so IDs sort by creation time. Every pending task carries its ID, so the
// 16 characters saved over a UUID string are 10% of a small task's memory.
// A collision needs two IDs in the same millisecond with the same 52
// random bits.
func NewID() string {
	var b [13]byte
	binary.BigEndian.PutUint64(b[0:8], uint64(time.Now().UnixMilli())<<16)
	if _, err := rand.Read(b[6:13]); err != nil {
		panic("shardq: no randomness for task IDs: " + err.Error())
	}
	b[12] &= 0xf0 // 100 bits in all, the last 4 of 104 unused
	return idEncoding.EncodeToString(b[:])[:20]
}
