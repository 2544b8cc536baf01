package queue

import (
	"fmt"

	"github.com/shardq/shardq/internal/config"
)

// checkQueueName reports whether name can name a queue: 1 to 128 bytes
// of UTF-8 with no braces (they would break the cluster hash tag), no
// whitespace and no control characters. A bad name is ErrInvalid.
func checkQueueName(name string) error {
	if err := config.CheckName(name); err != nil {
		return fmt.Errorf("%w %q: %s", errInvalidQueueName, name, err)
	}
	return nil
}

func checkName(s string) error { return config.CheckName(s) }

// validateTaskID applies the queue name rules to a caller-chosen task ID.
func validateTaskID(id string) error {
	if err := checkName(id); err != nil {
		return fmt.Errorf("%w: task ID %q: %s", errInvalidTask, id, err)
	}
	return nil
}
