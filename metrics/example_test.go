package metrics_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardq/shardq/metrics"
	"github.com/shardq/shardq/queue"
)

func ExampleNewQueueCollector() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()
	client, _ := queue.NewClient(rdb, queue.Config{})
	task := queue.NewRawTask("email:send", nil)
	for _, opt := range []queue.Option{queue.In("email"), queue.In("email"), queue.ProcessIn(time.Hour)} {
		if _, err := client.Enqueue(ctx, task, queue.In("email"), opt); err != nil {
			log.Fatal(err)
		}
	}

	insp, err := queue.NewInspector(rdb, queue.Config{})
	if err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewQueueCollector(insp, metrics.QueueOptions{}))
	// serve it with promhttp.HandlerFor(reg, promhttp.HandlerOpts{});
	// here, one scrape by hand
	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "shardq_queue_tasks" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			fmt.Printf("%s{queue=%q,state=%q} %v\n", f.GetName(), labels["queue"], labels["state"], m.GetGauge().GetValue())
		}
	}
	// Output:
	// shardq_queue_tasks{queue="email",state="active"} 0
	// shardq_queue_tasks{queue="email",state="dead"} 0
	// shardq_queue_tasks{queue="email",state="pending"} 2
	// shardq_queue_tasks{queue="email",state="retry"} 0
	// shardq_queue_tasks{queue="email",state="scheduled"} 1
	// shardq_queue_tasks{queue="email",state="succeeded"} 0
	// shardq_queue_tasks{queue="email",state="waiting"} 0
}
