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

// matchWeight returns the weight a queue found in the registry runs with:
// the highest of the patterns it matches, and whether it matches any.
// Queues named in Config.Queues are run as configured, not by pattern.
func (c *Config) matchWeight(q string) (int, bool) {
	if _, static := c.Queues[q]; static {
		return 0, false
	}
	best := 0
	for p, w := range c.QueuePatterns {
		if ok, _ := path.Match(p, q); ok && w > best {
			best = w
		}
	}
	return best, best > 0
}
