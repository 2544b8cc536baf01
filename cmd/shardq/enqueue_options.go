package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/shardq/shardq/queue"
)

// taskFlags are enqueue's flags for the task options beyond the first
// ones (queue, type, delay, retries, timeout, ID, uniqueness by payload):
// every other queue.Option a producer in Go has.
type taskFlags struct {
	group         string
	retention     time.Duration
	headers       listFlag
	uniqueBy      string
	untilFinished time.Duration
	at            string
	deadline      string
}

func (t *taskFlags) add(fs *flags) {
	fs.StringVar(&t.group, "group", "", "the task's group (a tenant, a customer): the queue's group limits and turns apply per group")
	fs.DurationVar(&t.retention, "retention", 0, "keep the task this long once it succeeded, with its result")
	fs.Var(&t.headers, "header", "a header `name=value` the handler reads in Task.Headers; repeatable")
	fs.StringVar(&t.uniqueBy, "unique-by", "", "the uniqueness `ID` the task is unique by, instead of its type and payload (with --unique or --unique-until-finished)")
	fs.DurationVar(&t.untilFinished, "unique-until-finished", 0, "reject tasks with the same type and payload (or --unique-by) while this one lives, and this `long` after it finished (0s: release at once)")
	fs.StringVar(&t.at, "at", "", "run the task at this `time` (RFC 3339, 2026-12-24T18:00:00Z) instead of now")
	fs.StringVar(&t.deadline, "deadline", "", "cancel every attempt at this `time`: RFC 3339, or a duration from now (90m)")
}

// options turns the flags given into task options; unique is --unique's
// TTL, which --unique-by needs unless --unique-until-finished holds the
// lock instead.
func (t *taskFlags) options(set map[string]bool, unique time.Duration) ([]queue.Option, error) {
	var opts []queue.Option
	if set["group"] {
		opts = append(opts, queue.Group(t.group))
	}
	if set["retention"] {
		if t.retention < 0 {
			return nil, usageErr("--retention %v: want >= 0", t.retention)
		}
		opts = append(opts, queue.Retention(t.retention))
	}
	if len(t.headers) > 0 {
		h := map[string]string{}
		for _, kv := range t.headers {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, usageErr("--header %q: want name=value", kv)
			}
			h[k] = v
		}
		opts = append(opts, queue.Headers(h))
	}
	if set["unique-until-finished"] {
		if t.untilFinished < 0 {
			return nil, usageErr("--unique-until-finished %v: want >= 0", t.untilFinished)
		}
		opts = append(opts, queue.UniqueUntilFinished(t.untilFinished))
	}
	if set["unique-by"] {
		ttl := unique
		switch {
		case ttl == 0 && !set["unique-until-finished"]:
			return nil, usageErr("--unique-by %q needs --unique TTL or --unique-until-finished: how long the lock holds", t.uniqueBy)
		case ttl == 0:
			ttl = time.Millisecond // UniqueUntilFinished's lock rules; UniqueBy wants a TTL all the same
		}
		opts = append(opts, queue.UniqueBy(t.uniqueBy, ttl))
	}
	if set["at"] {
		at, err := time.Parse(time.RFC3339, t.at)
		if err != nil {
			return nil, usageErr("--at %q: want an RFC 3339 time such as 2026-12-24T18:00:00Z", t.at)
		}
		opts = append(opts, queue.ProcessAt(at))
	}
	if set["deadline"] {
		d, err := parseWhen(t.deadline, time.Now())
		if err != nil {
			return nil, usageErr("--deadline %q: %v", t.deadline, err)
		}
		opts = append(opts, queue.Deadline(d))
	}
	return opts, nil
}

// parseWhen reads a time: RFC 3339, or a positive duration from now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("want an RFC 3339 time (2026-12-24T18:00:00Z) or a positive duration from now (90m)")
	}
	return now.Add(d), nil
}
