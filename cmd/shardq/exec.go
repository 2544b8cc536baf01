package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/shardq/shardq/worker"
)

// stderrTail is how much of a failed command's standard error is recorded
// as the task's error.
const stderrTail = 2048

// runCommand runs b.argv with the payload on standard input and maps how it
// ended: exit 0 is success, b.retryExitCode a requested retry, any other
// exit code a failure (retried with backoff), with the tail of standard
// error as the recorded error. A command still running when ctx ends
// (the task's timeout, the handler's, shutdown) is killed with its whole
// process group.
func (b *builtin) runCommand(ctx context.Context, t *worker.Task, body []byte) error {
	cmd := exec.CommandContext(ctx, b.argv[0], b.argv[1:]...)
	cmd.Stdin = bytes.NewReader(body)
	cmd.Stdout = b.stdout
	stderr := &tail{max: stderrTail}
	cmd.Stderr = stderr
	cmd.Env = append(os.Environ(),
		"SHARDQ_TASK_ID="+t.ID,
		"SHARDQ_TASK_TYPE="+t.Type,
		"SHARDQ_ATTEMPT="+strconv.Itoa(t.Attempt),
		"SHARDQ_QUEUE="+t.Queue,
	)
	ownProcessGroup(cmd)
	cmd.WaitDelay = time.Second // for grandchildren that keep the pipes open
	err := cmd.Run()
	if err == nil {
		return nil
	}
	name := b.argv[0]
	withTail := func(err error) error {
		if s := stderr.String(); s != "" {
			return fmt.Errorf("%w: %s", err, s)
		}
		return err
	}
	if ctx.Err() != nil {
		return withTail(fmt.Errorf("%s killed: %s", name, killed(ctx)))
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return fmt.Errorf("run %s: %w", name, err) // not found, not executable
	}
	switch code := exit.ExitCode(); {
	case code == b.retryExitCode:
		return retry(b.retryIn, withTail(fmt.Errorf("%s exited with %d (temporary failure)", name, code)))
	case code < 0:
		return withTail(fmt.Errorf("%s: %v", name, exit)) // killed by a signal
	default:
		return withTail(fmt.Errorf("%s exited with %d", name, code))
	}
}
