package main

import (
	"fmt"
	"os"

	"github.com/shardq/shardq/queue"
)

// storeFlags are the flags of how task values are stored: encrypted under
// a key ring, and compressed.
type storeFlags struct {
	keyFile        string
	compression    string
	allowPlaintext bool
}

const keyFileHelp = "JSON key ring `file` that encrypts and decrypts payloads: " +
	`{"current": "ID", "keys": {"ID": "<32 bytes in base64>"}} (default $SHARDQ_KEY_FILE)`

// add registers --key-file, --compression when the command writes, and
// --allow-plaintext when it reads.
func (s *storeFlags) add(fs *flags, writes, reads bool) {
	fs.StringVar(&s.keyFile, "key-file", "", keyFileHelp)
	if writes {
		fs.StringVar(&s.compression, "compression", "fast", "how payloads of 512 bytes and more are stored: fast (S2), small (zstd) or none")
	}
	if reads {
		fs.BoolVar(&s.allowPlaintext, "allow-plaintext", false,
			"with --key-file, accept values that are not encrypted, written before encryption was turned on (by default they are refused)")
	}
}

// apply sets cfg's key ring and compression from the flags; a file that
// cannot be read or holds no usable ring is a usage error.
func (s *storeFlags) apply(m *Main, cfg *queue.Config) error {
	switch s.compression {
	case "", "fast", "small", "none":
		cfg.Compression = s.compression
	default:
		return usageErr("--compression %q: want fast, small or none", s.compression)
	}
	path := cmpOr(s.keyFile, m.Getenv("SHARDQ_KEY_FILE"))
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: --key-file: %v", errUsage, err)
	}
	warnShared(m, "key file", path)
	ring, err := queue.ParseKeyRing(b)
	if err != nil {
		return fmt.Errorf("%w: --key-file %s: %v", errUsage, path, err)
	}
	cfg.KeyRing = ring
	cfg.AllowPlaintext = s.allowPlaintext
	return nil
}

// warnShared warns, as ssh does of a private key, when the file at path
// that holds a secret may be read or written by other users.
func warnShared(m *Main, what, path string) {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	fmt.Fprintf(m.Stderr, "warning: %s %s can be read or written by other users (mode %#o): run chmod 600 %s\n",
		what, path, fi.Mode().Perm(), path)
}
