package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/shardq/shardq/queue"
)

// taskAction is run or delete: an action on tasks named by ID, or on
// every task of a state that matches a query, with --dry-run and --yes.
type taskAction struct {
	verb, done string // "run", "ran"
	summ       string
	// states are the states a selection by --state may name: those the
	// Inspector's call for every task of a state takes.
	states []queue.State
	// one and all pick the Inspector's calls, by ID and for a whole
	// state, once the command has connected and built its Inspector.
	one     func(insp *queue.Inspector) func(ctx context.Context, q, id string) error
	all     func(insp *queue.Inspector) func(ctx context.Context, q string, s queue.State) (int64, error)
	details string
}

func (a *taskAction) name() string    { return a.verb }
func (a *taskAction) summary() string { return a.summ }

// run parses the flags and acts.
func (a *taskAction) run(ctx context.Context, m *Main, args []string) error {
	var f actFlags
	fs := m.flagSet(a)
	f.add(fs, a.verb)
	describe(fs, a, "--queue Q ID... | --queue Q --state STATE [filters] (--yes | --dry-run)", a.details, actExitCodes)
	ids, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	return a.do(ctx, m, &f, ids, visited(fs))
}

// actExitCodes are the exit codes of run and delete.
const actExitCodes = `Exit codes:
  0  done, or counted with --dry-run
  1  Redis unreachable, no such queue (or the key prefix has none), or a
     task named by ID not found or not in a state the action takes (the
     others are changed)
  2  bad flags, or --state without --yes or --dry-run (the message says
     how many tasks --yes would change)`

// maxBulk bounds how many tasks one query-selected action changes: the
// IDs are read before any is changed. Run it again for more.
const maxBulk = 10_000

// actFlags are the flags of run and delete.
type actFlags struct {
	inspectFlags
	queue, state                  string
	typ, errText, idPrefix, group string
	yes, dryRun                   bool
	max                           int
}

func (f *actFlags) add(fs *flags, verb string) {
	f.inspectFlags.add(fs)
	fs.StringVar(&f.queue, "queue", "", "the queue (required)")
	fs.StringVar(&f.state, "state", "", "act on every task in this state (with --yes), instead of tasks named by ID")
	fs.StringVar(&f.typ, "type", "", `with --state: only tasks of this type, or a prefix ending in "*"`)
	fs.StringVar(&f.errText, "error", "", "with --state: only tasks whose last error holds this text, in any case")
	fs.StringVar(&f.idPrefix, "id-prefix", "", "with --state: only tasks whose ID starts so")
	fs.StringVar(&f.group, "group", "", "with --state: only tasks of this group")
	fs.BoolVar(&f.yes, "yes", false, "with --state: do it ("+verb+" every task the query selects)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "with --state: count the tasks it would "+verb+", and change nothing")
	fs.IntVar(&f.max, "max", maxBulk, "with a filter: at most this many tasks")
}

// filtered reports whether a filter narrows the selection, which then
// goes task by task instead of in the Inspector's batches for a state.
func (f *actFlags) filtered() bool {
	return f.typ != "" || f.errText != "" || f.idPrefix != "" || f.group != ""
}

// do runs the action of the parsed flags on ids, or on the query.
func (a *taskAction) do(ctx context.Context, m *Main, f *actFlags, ids []string, set map[string]bool) error {
	if f.queue == "" && len(ids) > 0 {
		return usageErr("--queue is required: which queue holds %q?", ids)
	}
	if err := needQueue(f.queue); err != nil {
		return err
	}
	byQuery := f.state != ""
	switch {
	case byQuery && len(ids) > 0:
		return usageErr("name tasks by ID or select them with --state, not both")
	case !byQuery && len(ids) == 0:
		return usageErr("name the tasks to %s by ID, or select them with --state (and --yes)", a.verb)
	case !byQuery && (f.filtered() || f.yes || f.dryRun || set["max"]):
		return usageErr("--type, --error, --id-prefix, --group, --yes, --dry-run and --max go with --state")
	case byQuery && !slices.Contains(a.states, queue.State(f.state)):
		return usageErr("--state %q: %s takes %s", f.state, a.verb, joinStates(a.states))
	case f.yes && f.dryRun:
		return usageErr("--yes and --dry-run contradict each other: pass one")
	case f.max < 1:
		return usageErr("--max %d, want >= 1", f.max)
	case set["max"] && !f.filtered():
		return usageErr("--max bounds a selection with --type, --error, --id-prefix or --group; without one the whole state is changed in batches")
	}
	s, err := m.open(ctx, &f.inspectFlags)
	if err != nil {
		return err
	}
	defer s.close()
	if !byQuery {
		return a.byID(ctx, m, s, f, ids)
	}
	return a.byQuery(ctx, m, s, f)
}

// byID acts on each task named; a task not found or in a state the
// action does not take is reported, and the others are changed.
func (a *taskAction) byID(ctx context.Context, m *Main, s *session, f *actFlags, ids []string) error {
	r := &actionResult{Action: a.verb, Queue: f.queue}
	act := a.one(s.insp)
	for _, id := range ids {
		err := act(ctx, f.queue, id)
		switch {
		case err == nil:
			r.Count++
		case errors.Is(err, queue.ErrNotFound), errors.Is(err, queue.ErrTaskState):
			if why := s.explain(ctx, err, f.queue); why != err {
				return why // the queue, or the prefix, has nothing: every ID would say so
			}
			r.Failed = append(r.Failed, failedTask{ID: id, Error: err.Error()})
		default:
			return fmt.Errorf("after %d tasks: %w", r.Count, err)
		}
	}
	if err := r.partial(m, f.out.json(), a.done+" "+tasksOf(r.Count, false, "", f.queue)); err != nil {
		return err
	}
	if len(r.Failed) > 0 {
		return fmt.Errorf("%d of %d tasks not changed (see above)", len(r.Failed), len(ids))
	}
	return nil
}

// byQuery counts the tasks the query selects, then, with --yes, acts on
// them: every task of the state in batches (RunAllTasks,
// DeleteAllTasks), or with a filter each task found, by ID.
func (a *taskAction) byQuery(ctx context.Context, m *Main, s *session, f *actFlags) error {
	state := queue.State(f.state)
	r := &actionResult{Action: a.verb + "-all", Queue: f.queue, State: f.state, Group: f.group, DryRun: !f.yes}
	var ids []string
	if f.filtered() {
		var err error
		ids, r.AtLeast, err = matching(ctx, s.insp, f)
		if err != nil {
			return s.explain(ctx, err, f.queue)
		}
		r.Count = int64(len(ids))
	} else {
		qi, err := s.insp.QueueInfo(ctx, f.queue)
		if err != nil {
			return s.explain(ctx, err, f.queue)
		}
		r.Count = countOf(qi, state)
	}
	what := tasksOf(r.Count, r.AtLeast, f.state, f.queue)
	if !f.yes {
		if f.dryRun {
			return r.print(m, f.out.json(), "would "+a.verb+" "+what)
		}
		return usageErr("would %s %s: pass --yes to %s them, or --dry-run to count only", a.verb, what, a.verb)
	}
	if !f.filtered() {
		n, err := a.all(s.insp)(ctx, f.queue, state)
		if err != nil {
			return fmt.Errorf("after %d tasks: %w", n, err)
		}
		r.Count = n
		return r.print(m, f.out.json(), a.done+" "+tasksOf(n, false, f.state, f.queue))
	}
	r.Count = 0
	act := a.one(s.insp)
	for _, id := range ids {
		err := act(ctx, f.queue, id)
		switch {
		case err == nil:
			r.Count++
		case errors.Is(err, queue.ErrNotFound), errors.Is(err, queue.ErrTaskState):
			// it left the state meanwhile (a worker took it, another
			// operator acted): skipped, as the dashboard's bulk action does
		default:
			return fmt.Errorf("after %d tasks: %w", r.Count, err)
		}
	}
	said := a.done + " " + tasksOf(r.Count, false, f.state, f.queue)
	if r.AtLeast {
		said += fmt.Sprintf("; more match than --max %d: run it again for them", f.max)
	}
	return r.print(m, f.out.json(), said)
}
