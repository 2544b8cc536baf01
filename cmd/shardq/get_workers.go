package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardq/shardq/queue"
)

// workerJSON is a worker process as --output json prints it.
type workerJSON struct {
	ID            string         `json:"id"`
	LastHeartbeat time.Time      `json:"last_heartbeat,omitzero"`
	Host          string         `json:"host,omitempty"`
	PID           int            `json:"pid,omitempty"`
	Started       time.Time      `json:"started,omitzero"`
	Queues        map[string]int `json:"queues,omitempty"` // queue -> weight
	Strict        bool           `json:"strict_priority,omitempty"`
	Concurrency   int            `json:"concurrency,omitempty"`
	Busy          int            `json:"busy"`
	Ahead         int            `json:"ahead"`
	Tasks         []taskJSON     `json:"tasks"`
}

// getWorkers lists the worker processes with a heartbeat.
func getWorkers(ctx context.Context, m *Main, s *session, f *getFlags, _ []string) error {
	ws, err := s.insp.Workers(ctx)
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		if err := s.nothing(ctx); err != nil {
			return err
		}
	}
	if f.out.json() {
		out := make([]workerJSON, 0, len(ws))
		for _, w := range ws {
			v := workerJSON{ID: w.ID, LastHeartbeat: w.LastHeartbeat, Host: w.Host, PID: w.PID, Started: w.Started,
				Queues: w.Queues, Strict: w.Strict, Concurrency: w.Concurrency, Busy: w.Busy, Ahead: w.Ahead,
				Tasks: make([]taskJSON, 0, len(w.Tasks))}
			for _, ti := range w.Tasks {
				v.Tasks = append(v.Tasks, newTaskJSON(ti, false))
			}
			out = append(out, v)
		}
		return writeJSON(m.Stdout, out)
	}
	t := newTable(column{head: "WORKER", cut: true}, column{head: "HOST", cut: true}, num("BUSY"), num("AHEAD"),
		column{head: "HEARTBEAT"}, column{head: "QUEUES", cut: true})
	now := time.Now()
	for _, w := range ws {
		busy := itoa(int64(w.Busy))
		if w.Concurrency > 0 {
			busy = fmt.Sprintf("%d/%d", w.Busy, w.Concurrency)
		}
		t.add(w.ID, dash(w.Host), busy, itoa(int64(w.Ahead)), ago(w.LastHeartbeat, now), queueWeights(w))
	}
	t.write(m.Stdout)
	return nil
}

// queueWeights lists a worker's queues with their weights: "email:3,default".
func queueWeights(w *queue.WorkerInfo) string {
	names := make([]string, 0, len(w.Queues))
	for q := range w.Queues {
		names = append(names, q)
	}
	slices.Sort(names)
	for i, q := range names {
		if wt := w.Queues[q]; wt != 1 {
			names[i] = fmt.Sprintf("%s:%d", q, wt)
		}
	}
	return dash(strings.Join(names, ","))
}
