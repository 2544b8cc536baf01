package main

import (
	"context"
	"slices"
	"strings"

	"github.com/shardq/shardq/queue"
)

// getCommand lists one kind of thing, as kubectl get does: queues,
// tasks, workers, groups, workflows or schedules, as a table or JSON.
// Exit codes: 0 listed (an empty list too, when the prefix has queues);
// 1 Redis unreachable, no such queue, or nothing found because the
// prefix has no queues; 2 bad flags, kind or state.
type getCommand struct{}

func (*getCommand) name() string { return "get" }
func (*getCommand) summary() string {
	return "list queues, tasks, workers, groups, workflows or schedules"
}

const getDetails = `
Kinds:
  queues [NAME...]   a page of the queues (or those named, or matched by a
                     pattern such as 'tenant:*') with their tasks per state
  tasks --queue Q    a page of a queue's tasks in --state (default pending);
                     with --type, --error or --id-prefix, the dashboard's
                     search: newest first, at most --scan tasks read per call
  workers            the worker processes with a heartbeat
  groups --queue Q   a page of a queue's groups, most tasks waiting first
  workflows          the newest workflows, chains and batches among them
  schedules          the periodic schedules schedulers registered

--state is pending, active, scheduled, retry, dead, succeeded, or recent (the
feed of tasks enqueued lately, whatever their state now). --group keeps the
tasks of one group: it reads a page of --limit tasks at a time until --limit
tasks matched or --scan were read, and prints every match of the pages read.
A page with more after it ends with "more: add --after MARKER" on stderr.

Tables fit 80 columns, cutting long types and errors ("…"); --output json
has every field in full, and {"next": marker} where a page has one.`

const getExitCodes = `Exit codes:
  0  listed (an empty list too, when the prefix has queues)
  1  Redis unreachable, no such queue, or nothing found because the key
     prefix has no queues (the message names the prefixes that have some)
  2  bad flags, kind or state`

// getFlags are get's flags; each kind takes some of them (getKinds).
type getFlags struct {
	inspectFlags
	queue    string
	state    string
	typ      string
	errText  string
	idPrefix string
	group    string
	after    string
	limit    int
	scan     int
	order    string
}

// getKind lists one kind, with the flags of its own it takes.
type getKind struct {
	flags []string
	list  func(ctx context.Context, m *Main, s *session, f *getFlags, args []string) error
}

var getKinds = map[string]getKind{
	"queues":    {[]string{"after", "limit"}, getQueues},
	"tasks":     {[]string{"queue", "state", "type", "error", "id-prefix", "group", "after", "limit", "scan", "order"}, getTasks},
	"workers":   {nil, getWorkers},
	"groups":    {[]string{"queue", "after", "limit"}, getGroups},
	"workflows": {[]string{"limit"}, getWorkflows},
	"schedules": {nil, getSchedules},
}

// kindFlags are the flags some kinds take and others do not.
var kindFlags = []string{"queue", "state", "type", "error", "id-prefix", "group", "after", "limit", "scan", "order"}

func (c *getCommand) run(ctx context.Context, m *Main, args []string) error {
	var f getFlags
	fs := m.flagSet(c)
	f.inspectFlags.add(fs)
	fs.StringVar(&f.queue, "queue", "", "the queue (tasks, groups)")
	fs.StringVar(&f.state, "state", "", "the tasks' state: pending, active, scheduled, retry, dead, succeeded or recent")
	fs.StringVar(&f.typ, "type", "", `search: the task type, or a prefix ending in "*" ("email:*")`)
	fs.StringVar(&f.errText, "error", "", "search: text the last error holds, in any case")
	fs.StringVar(&f.idPrefix, "id-prefix", "", "search: the start of the task ID")
	fs.StringVar(&f.group, "group", "", "keep the tasks of this group")
	fs.StringVar(&f.after, "after", "", "the marker of the page to list, printed after the previous one")
	fs.IntVar(&f.limit, "limit", 50, "at most this many rows (1..1000; workflows 1..100)")
	fs.IntVar(&f.scan, "scan", 2000, "search and --group: at most this many tasks read (1..2000)")
	fs.StringVar(&f.order, "order", "", "oldest or newest first (default: newest for dead, succeeded and recent)")
	describe(fs, c, "KIND [NAME...] [flags]", getDetails, getExitCodes)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("name a kind: %s", strings.Join(kindNames(), ", "))
	}
	name := plural(pos[0])
	kind, ok := getKinds[name]
	if !ok {
		return usageErr("unknown kind %q, want one of %s", pos[0], strings.Join(kindNames(), ", "))
	}
	if len(pos) > 1 && name != "queues" {
		return usageErr("unexpected arguments %q: get %s takes none", pos[1:], name)
	}
	set := visited(fs)
	for _, fl := range kindFlags {
		if set[fl] && !slices.Contains(kind.flags, fl) {
			return usageErr("--%s does not apply to get %s", fl, name)
		}
	}
	if err := f.check(name); err != nil {
		return err
	}
	s, err := m.open(ctx, &f.inspectFlags)
	if err != nil {
		return err
	}
	defer s.close()
	return kind.list(ctx, m, s, &f, pos[1:])
}

// check checks the flags that need no Redis.
func (f *getFlags) check(kind string) error {
	most := 1000
	if kind == "workflows" {
		most = maxWorkflows
	}
	switch {
	case f.limit < 1 || f.limit > most:
		return usageErr("--limit %d, want 1..%d", f.limit, most)
	case f.scan < 1 || f.scan > 2000:
		return usageErr("--scan %d, want 1..2000", f.scan)
	case f.order != "" && f.order != "oldest" && f.order != "newest":
		return usageErr("--order %q, want oldest or newest", f.order)
	}
	if kind == "tasks" || kind == "groups" {
		if err := needQueue(f.queue); err != nil {
			return err
		}
	}
	if f.state != "" && !slices.Contains(listStates, queue.State(f.state)) {
		return usageErr("--state %q, want one of %s", f.state, joinStates(listStates))
	}
	return nil
}

// kindNames are the kinds get takes, sorted.
func kindNames() []string {
	var out []string
	for k := range getKinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// plural takes "task" for "tasks", as kubectl takes "pod" for "pods".
func plural(kind string) string {
	if _, ok := getKinds[kind+"s"]; ok {
		return kind + "s"
	}
	return kind
}
