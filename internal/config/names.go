package config

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen bounds queue names, task types and caller-chosen task IDs,
// in bytes.
const MaxNameLen = 128

// CheckName says what keeps s from being a name shardq puts in a key: 1
// to MaxNameLen bytes of UTF-8, no braces (they would break the cluster
// hash tag), no whitespace and no control characters.
func CheckName(s string) error {
	if s == "" {
		return fmt.Errorf("empty")
	}
	if len(s) > MaxNameLen {
		return fmt.Errorf("%d bytes, at most %d", len(s), MaxNameLen)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("not valid UTF-8")
	}
	for _, r := range s {
		switch {
		case r == '{' || r == '}':
			return fmt.Errorf("contains %q", r)
		case unicode.IsSpace(r), unicode.IsControl(r):
			return fmt.Errorf("contains whitespace or a control character %U", r)
		}
	}
	return nil
}
