package main

import (
	"context"
	"fmt"
	"path"
	"slices"

	"github.com/shardq/shardq/queue"
)

// queuePage is a page of queues as --output json prints it, as the
// dashboard's /api/queues does.
type queuePage struct {
	Queues []queueJSON `json:"queues"`
	// Next is the last name of this page when more follow: pass it to
	// --after. "" on the last page.
	Next string `json:"next"`
}

// getQueues lists a page of the queues: every queue, or those named or
// matched by a pattern in path.Match syntax ("tenant:*"), as a worker's
// --queues takes them. It reads the names, then the counts of the page's
// queues alone, so its cost is bounded by --limit whatever the number of
// queues.
func getQueues(ctx context.Context, m *Main, s *session, f *getFlags, args []string) error {
	for _, a := range args {
		if err := checkQueueOrPattern(a); err != nil {
			return usageErr("%v", err)
		}
	}
	all, err := s.insp.Queues(ctx) // sorted
	if err != nil {
		return err
	}
	if len(all) == 0 {
		if err := s.nothing(ctx); err != nil {
			return err
		}
	}
	names, missing := matchQueues(all, args)
	if missing != "" {
		return s.explain(ctx, fmt.Errorf("%w: no queue %q", queue.ErrNotFound, missing), missing)
	}
	start := 0
	if f.after != "" {
		start, _ = slices.BinarySearch(names, f.after)
		if start < len(names) && names[start] == f.after {
			start++
		}
	}
	page := names[start:min(len(names), start+f.limit)]
	out := queuePage{Queues: []queueJSON{}}
	if start+len(page) < len(names) {
		out.Next = page[len(page)-1]
	}
	var infos []*queue.QueueInfo
	if len(page) > 0 {
		if infos, err = s.insp.QueueInfos(ctx, page...); err != nil {
			return err
		}
	}
	if f.out.json() {
		for _, qi := range infos {
			out.Queues = append(out.Queues, newQueueJSON(qi))
		}
		return writeJSON(m.Stdout, out)
	}
	t := newTable(column{head: "QUEUE", cut: true}, num("PENDING"), num("ACTIVE"), num("SCHEDULED"), num("RETRY"),
		num("DEAD"), num("SUCCEEDED"), column{head: "PAUSED"})
	for _, qi := range infos {
		t.add(qi.Queue, itoa(qi.Pending), itoa(qi.Active), itoa(qi.Scheduled), itoa(qi.Retry), itoa(qi.Dead),
			itoa(qi.Succeeded), yesNo(qi.Paused))
	}
	t.write(m.Stdout)
	if out.Next != "" {
		fmt.Fprintf(m.Stderr, "more: add --after %s\n", out.Next)
	}
	return nil
}

// matchQueues keeps the names of all that args name or match, sorted;
// no args keeps all. missing is a name given that is not among them.
func matchQueues(all, args []string) (names []string, missing string) {
	if len(args) == 0 {
		return all, ""
	}
	var out []string
	for _, a := range args {
		if !isPattern(a) && !slices.Contains(all, a) {
			return nil, a
		}
	}
	for _, n := range all {
		for _, a := range args {
			if ok, _ := path.Match(a, n); ok || a == n {
				out = append(out, n)
				break
			}
		}
	}
	return out, ""
}

// num is a column of numbers, aligned right.
func num(head string) column { return column{head: head, right: true} }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "-"
}
