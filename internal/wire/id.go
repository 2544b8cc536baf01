package wire

import (
	"crypto/rand"
	"encoding/base32"

	"github.com/google/uuid"
)

// Task IDs have two forms. The stored form is what messages, feeds and
// scripts carry: a generated ID is its UUIDv7's 16 raw bytes (every
// pending task carries its ID, so 16 bytes, not a 36-character text, is
// memory saved per task). The public form is what users, logs, URLs and
// the dashboard see: the canonical UUID text. A caller-chosen ID
// (queue.TaskID) is stored as it is, except one that is exactly 16 bytes
// long, which gets a 0x00 byte appended so it cannot pass for a packed
// UUID; IDs hold no control characters, so the escape is unambiguous. A
// caller's ID that is canonical lowercase UUID text is stored packed, like
// a generated one, and shown as the same text. PublicID and StoredID are
// each other's inverse.

// NewID returns a new task ID in its stored form: a UUIDv7 (unix
// milliseconds, then random bits), so IDs sort by creation time.
func NewID() string {
	u, err := uuid.NewV7()
	if err != nil {
		panic("shardq: no randomness for task IDs: " + err.Error())
	}
	return string(u[:])
}

// IDTime returns the unix millisecond a generated ID (a UUIDv7 in its 16
// stored bytes) was made at, and false for any other ID.
func IDTime(stored string) (int64, bool) {
	if len(stored) != 16 || stored[6]>>4 != 7 || stored[8]&0xc0 != 0x80 {
		return 0, false
	}
	var ms int64
	for i := range 6 {
		ms = ms<<8 | int64(stored[i])
	}
	return ms, true
}

// PublicID returns the public form of a stored task ID.
func PublicID(stored string) string {
	switch {
	case len(stored) == 16:
		var u uuid.UUID
		copy(u[:], stored)
		return u.String()
	case len(stored) == 17 && stored[16] == 0:
		return stored[:16] // a caller's 16-byte ID, escaped
	}
	return stored
}

// StoredID returns the stored form of a public task ID.
func StoredID(public string) string {
	switch len(public) {
	case 36:
		if u, err := uuid.Parse(public); err == nil && u.String() == public {
			return string(u[:])
		}
	case 16:
		return public + "\x00"
	}
	return public
}

// nonceEncoding is lowercase base32, for names.
var nonceEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// Nonce returns 6 random lowercase characters (30 bits), to tell apart
// worker IDs and key prefixes made on one host.
func Nonce() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("shardq: no randomness: " + err.Error())
	}
	return nonceEncoding.EncodeToString(b[:])[:6]
}
