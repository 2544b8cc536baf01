package serve

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/shardq/shardq/internal/home"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/rcall"
	"github.com/shardq/shardq/internal/wire"
	"github.com/shardq/shardq/queue"
)

// flows is a server's part in batches and workflows: it forwards the
// notifications its partitions' ack and fail scripts wrote (T:notify) to
// the flows' homes, and delivers the homes' due outbox entries (next
// nodes, callbacks) into their queues. It does both right after it wrote
// a flow task's outcome, for low latency, and every WorkflowSweep for all
// homes, so what a killed worker left behind is picked up by the others.
type flows struct {
	env *home.Env
	// oneServer: a workflow node's ack applies its outcome at its home in
	// the same script (include/acks.lua), as every key is on one server
	oneServer bool
	kick      chan struct{}    // one token: a flow outcome was written
	client    *queue.Client    // for Task.ExtendWorkflow
	insp      *queue.Inspector // for Task.ParentResult
}

func (s *Engine) newFlows() *flows {
	f := &flows{
		env: &home.Env{RDB: s.rdb, Prefix: s.cfg.Prefix, ShardSize: s.cfg.ShardSize,
			FeedSize: s.cfg.FeedSize, IDTTL: s.cfg.IDTTL},
		kick:      make(chan struct{}, 1),
		oneServer: rcall.OneServer(s.rdb),
	}
	if s.cfg.Clock != nil {
		f.env.Now = s.cfg.now
	}
	f.client, _ = queue.NewClient(s.rdb, s.cfg.Config) // cfg was validated by NewServer
	f.insp, _ = queue.NewInspector(s.rdb, s.cfg.Config)
	return f
}

// flowTarget returns the workflow key and node name an ack of a task with
// flow ref flow passes, for the script to apply the outcome at the
// workflow's home: a workflow node's on one Redis server; "", ""
// otherwise (the outcome goes through T:notify). The script reads them as
// they come, with no parsing.
func (s *Engine) flowTarget(flow string) (workflow, node string) {
	if !s.flows.oneServer || len(flow) == 0 || flow[0] != 'w' {
		return "", ""
	}
	r, err := wire.ParseFlowRef(flow)
	if err != nil || r.Home < 0 || r.Home >= keys.FlowPartitions {
		return "", ""
	}
	return keys.Home(s.cfg.Prefix, r.Home).Workflow(r.ID), r.Node
}

// flowsWritten kicks the flow loop when any of the written outcomes is a
// flow task's success or death (a retry tells its flow nothing) that went
// into T:notify; one applied at its home already has nothing to forward.
func (s *Engine) flowsWritten(os []outcome) {
	var flowed, forward bool
	for i := range os {
		if o := &os[i]; o.flow != "" && (o.kind == outcomeAck || (o.kind == outcomeFail && o.delayMS < 0 && o.snooze == 0)) {
			flowed = true
			forward = forward || o.workflow == ""
		}
	}
	if flowed {
		s.probe.AfterFlowOutcome()
	}
	if forward {
		select {
		case s.flows.kick <- struct{}{}:
		default:
		}
	}
}

// maxFlowRounds bounds the forwarding rounds of one kick: a busy batch
// keeps its notification lists full, and the sweep comes back anyway.
const maxFlowRounds = 20

// sweepFlows runs until ctx ends: at a kick it forwards this server's
// notifications and delivers what became due; every WorkflowSweep it does so
// too, and one server per interval (keys.WorkflowSweep) delivers the due
// entries of every workflow home: callbacks and next links a killed worker
// did not deliver, members a dead producer left.
func (s *Engine) sweepFlows(ctx context.Context) {
	tick := time.NewTicker(s.cfg.WorkflowSweep)
	defer tick.Stop()
	for {
		var all bool
		select {
		case <-ctx.Done():
			return
		case <-s.flows.kick:
		case <-tick.C:
			all = true
		}
		if err := s.flowStep(ctx, all); err != nil && ctx.Err() == nil {
			s.logRedisError("flows", err)
		}
	}
}

// flowStep forwards notifications (up to maxFlowRounds rounds while the
// lists give some) and delivers the due entries of the homes they made
// due, and, when all is set and this server holds the interval's sweep
// lease, of every home.
func (s *Engine) flowStep(ctx context.Context, all bool) error {
	// the partitions served now: QueuePatterns add and remove queues
	var lists []string
	for _, p := range s.partList() {
		lists = append(lists, p.k.Notify())
	}
	due := map[int]bool{}
	var errs error
	for range maxFlowRounds {
		n, got, err := s.flows.env.Forward(ctx, lists)
		errs = errors.Join(errs, err)
		for _, h := range got {
			due[h] = true
		}
		if err != nil || n < home.MaxStep {
			break
		}
	}
	if len(due) > 0 {
		s.probe.BeforeFlowDeliver()
	}
	if all {
		// one sweeper per interval is enough: the others skip the homes
		took, err := s.rdb.SetNX(ctx, keys.WorkflowSweep(s.cfg.Prefix), s.cfg.WorkerID, s.cfg.WorkflowSweep).Result()
		errs = errors.Join(errs, err)
		if took {
			for h := range keys.FlowPartitions {
				due[h] = true
			}
		}
	}
	list := slices.Collect(maps.Keys(due))
	for range maxFlowRounds {
		if n, err := s.flows.env.Deliver(ctx, list); err != nil || n < home.MaxStep {
			return errors.Join(errs, err)
		}
	}
	return errs
}
