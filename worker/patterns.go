package worker

import (
	"fmt"
	"path"
	"strings"
)

// checkPatterns reports what is wrong with Config.QueuePatterns.
func checkPatterns(patterns map[string]int) error {
	for p, w := range patterns {
		if p == "" || strings.ContainsAny(p, "{} \t\r\n") {
			return fmt.Errorf("%w: Config.QueuePatterns %q: want a non-empty path.Match pattern without braces or whitespace", ErrInvalid, p)
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("%w: Config.QueuePatterns %q: %v", ErrInvalid, p, err)
		}
		if w < 1 {
			return fmt.Errorf("%w: Config.QueuePatterns[%q] weight %d, want >= 1", ErrInvalid, p, w)
		}
	}
	return nil
}
