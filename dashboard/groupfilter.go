package dashboard

import (
	"context"
	"strings"

	"github.com/shardq/shardq/internal/inspect"
	"github.com/shardq/shardq/queue"
)

// Redis keeps no index of a queue's listings by group, and TaskQuery has
// no group filter, so the group filter of a queue's tabs is a filter over
// the listing, bounded as a search is: it reads at most groupScan tasks
// per page, groupStep at a time, and a page may hold fewer than its limit
// before the end; its next link reads on from where it stopped.
const (
	groupScan = inspect.MaxSearchScan
	groupStep = 250
)

// groupFiltered is one page of a listing filtered by group.
type groupFiltered struct {
	Tasks []*queue.TaskInfo
	// Next is the marker after the last task read; More says the
	// listing goes on past it.
	Next string
	More bool
	// Scanned counts the tasks read for this page.
	Scanned int
}

// groupParam reads the group filter of a listing, "" for none.
func groupParam(v string) string { return strings.TrimSpace(v) }

// listGroup reads q's listing from its marker, keeping group's tasks,
// until it holds q.Limit of them, the listing ends, or groupScan tasks
// were read: at most groupScan/groupStep calls to ListTasks, and one more
// to stop at the page's last task.
func (d *server) listGroup(ctx context.Context, q queue.TaskQuery, group string) (*groupFiltered, error) {
	out := &groupFiltered{Next: q.After, More: true}
	for out.Scanned < groupScan && len(out.Tasks) < q.Limit {
		step := inspectorQuery(q)
		step.After, step.Limit = out.Next, min(groupStep, groupScan-out.Scanned)
		p, err := d.insp.ListTasks(ctx, step)
		if err != nil {
			return nil, err
		}
		if cut := nthOfGroup(p.Tasks, group, q.Limit-len(out.Tasks)); cut < len(p.Tasks) {
			// more of the group than the page holds: read the step again
			// up to the last one it takes, for the marker after it
			step.Limit = cut
			if p, err = d.insp.ListTasks(ctx, step); err != nil {
				return nil, err
			}
		}
		out.Scanned += len(p.Tasks)
		for _, ti := range p.Tasks {
			if ti.Group == group && len(out.Tasks) < q.Limit {
				out.Tasks = append(out.Tasks, ti)
			}
		}
		out.Next = p.Next
		if len(p.Tasks) < step.Limit || p.Next == "" {
			out.More = false // a short page: the listing's end
			break
		}
	}
	return out, nil
}

// nthOfGroup returns how many of tasks to read to take n of group's: the
// index after its nth, or len(tasks) when it holds no more than n.
func nthOfGroup(tasks []*queue.TaskInfo, group string, n int) int {
	for j, ti := range tasks {
		if ti.Group == group {
			if n--; n == 0 {
				return j + 1
			}
		}
	}
	return len(tasks)
}
