package worker

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// rig is a process test's Redis, one server or a cluster, and the
// clients the test reads it with.
type rig struct {
	rdb    redis.UniversalClient
	client *queue.Client
	insp   *queue.Inspector
	qcfg   queue.Config
	// queue is the queue the test runs; on a cluster, its partitions are
	// spread over every master.
	queue string
	// base is the child workers' Redis, prefix and queue.
	base childOpts
	// srv is the server of a single-server rig.
	srv *redistest.Server
}

// singleRig returns a rig on a server of its own, running queue q.
func singleRig(t *testing.T, q string, opts ...redistest.Option) *rig {
	t.Helper()
	b := setup(t, opts...)
	return &rig{rdb: b.rdb, client: b.client, insp: b.insp, qcfg: b.qcfg, queue: q, srv: b.srv,
		base: childOpts{Addr: b.srv.Addr, Prefix: b.qcfg.Prefix, Queue: q}}
}

// clusterRig returns a rig on cl with a prefix of its own, running a queue
// of 3 partitions, one on each master.
func clusterRig(t *testing.T, cl *redistest.Cluster) *rig {
	t.Helper()
	prefix := redistest.Prefix(t)
	q, _ := spreadQueue(t, cl, prefix, 3)
	rdb := clusterClient(t, cl)
	qcfg := queue.Config{Prefix: prefix, Partitions: map[string]int{q: 3}}
	client, err := queue.NewClient(rdb, qcfg)
	must(t, err)
	insp, err := queue.NewInspector(rdb, qcfg)
	must(t, err)
	addrs := ""
	for i, a := range cl.Addrs() {
		if i > 0 {
			addrs += ","
		}
		addrs += a
	}
	return &rig{rdb: rdb, client: client, insp: insp, qcfg: qcfg, queue: q,
		base: childOpts{Addr: addrs, Prefix: prefix, Queue: q, Partitions: 3, Cluster: true}}
}
