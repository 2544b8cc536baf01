package wire

import (
	"encoding/base32"

	"github.com/google/uuid"
)

// idEncoding is base32 with the lowercase "extended hex" alphabet, which
// keeps the byte order: IDs of UUIDv7s sort by creation time.
var idEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// NewID returns a new task ID: a UUIDv7 (time-ordered, random) in 26
// characters instead of 36, since every pending task carries its ID.
func NewID() string {
	u, err := uuid.NewV7()
	if err != nil {
		u = uuid.New() // the clock failed; a random ID is still unique
	}
	return idEncoding.EncodeToString(u[:])
}
