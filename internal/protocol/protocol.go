// Package protocol is the version of shardq's wire protocol
// (docs/protocol.md) and its record in Redis: the string
// keys.Protocol(prefix), "<major>.<minor>", says which version the
// prefix's data follows. A minor version adds only what older readers
// skip; a major version changes what an older writer or reader would get
// wrong, so a process of another major must not write under the prefix.
//
// Claim is the check a writer makes before its first write: it records its
// version when none is stored and refuses a stored version of another
// major. A worker claims when it starts; a producer claims with
// ClaimForProducer, which also refuses while workers that cannot read its
// messages run (docs/protocol.md, "Protocol version").
package protocol

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
)

// Current is the version docs/protocol.md describes, which this build
// writes.
var Current = Version{Major: 1, Minor: 0}

// Version is a protocol version.
type Version struct {
	Major, Minor int
}

// String is the stored form, "<major>.<minor>".
func (v Version) String() string { return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor) }

// Compatible reports whether a process of version v may read and write
// data of version stored: the same major.
func (v Version) Compatible(stored Version) bool { return v.Major == stored.Major }

// ErrIncompatible reports a stored version of another major than the
// process's, or, to a producer, a running worker that could not read
// what it writes.
var ErrIncompatible = errors.New("protocol: incompatible protocol version")

// Parse reads the stored form: two decimal counts of 0 to 999,999,
// separated by a dot, the major at least 1.
func Parse(s string) (Version, error) {
	maj, mnr, ok := strings.Cut(s, ".")
	major, err1 := count(maj)
	minor, err2 := count(mnr)
	if !ok || err1 != nil || err2 != nil || major < 1 {
		return Version{}, fmt.Errorf("protocol: bad stored version %q, want <major>.<minor>", s)
	}
	return Version{Major: major, Minor: minor}, nil
}

// count reads a decimal count of 1 to 6 digits, without a sign.
func count(s string) (int, error) {
	if s == "" || len(s) > 6 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, strconv.ErrSyntax
	}
	return strconv.Atoi(s)
}

// Claim records v as the version of prefix's data when none is stored
// (SET NX, one command with the read), and returns the stored version:
// v then. A stored version of another major is ErrIncompatible, naming
// both; one that does not parse is an error too, and v is not recorded.
func Claim(ctx context.Context, rdb redis.Cmdable, prefix string, v Version) (Version, error) {
	return claimed(ctx, rdb, rdb.SetArgs(ctx, keys.Protocol(prefix), v.String(), redis.SetArgs{Mode: "NX", Get: true}), prefix, v)
}

// claimed reads the reply of Claim's SET. A full Redis (maxmemory,
// noeviction) refuses any SET, though the scripts that drain a queue run
// (they allow OOM): then the version is only read, and checked, and
// recorded by a later writer.
func claimed(ctx context.Context, rdb redis.Cmdable, cmd *redis.StatusCmd, prefix string, v Version) (Version, error) {
	key := keys.Protocol(prefix)
	old, err := cmd.Result()
	if rcall.IsOOM(err) {
		old, err = rdb.Get(ctx, key).Result()
	}
	switch {
	case errors.Is(err, redis.Nil):
		return v, nil // recorded now, or nothing to refuse
	case err != nil:
		return Version{}, fmt.Errorf("protocol: read %s: %w", key, err)
	}
	stored, err := Parse(old)
	if err != nil {
		return Version{}, fmt.Errorf("%w (key %s)", err, key)
	}
	if !v.Compatible(stored) {
		return stored, fmt.Errorf("%w: %s holds %s, this process follows %s", ErrIncompatible, key, stored, v)
	}
	return stored, nil
}
