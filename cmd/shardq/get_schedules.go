package main

import (
	"context"
	"time"
)

// scheduleJSON is a periodic schedule as --output json prints it.
type scheduleJSON struct {
	Name    string    `json:"name"`
	Spec    string    `json:"spec"`
	Queue   string    `json:"queue"`
	Type    string    `json:"type"`
	Missed  string    `json:"missed,omitempty"`
	LastRun time.Time `json:"last_run,omitzero"`
	NextRun time.Time `json:"next_run,omitzero"`
}

// getSchedules lists the periodic schedules schedulers registered.
func getSchedules(ctx context.Context, m *Main, s *session, f *getFlags, _ []string) error {
	infos, err := s.insp.Schedules(ctx)
	if err != nil {
		return err
	}
	if len(infos) == 0 {
		if err := s.nothing(ctx); err != nil {
			return err
		}
	}
	if f.out.json() {
		out := make([]scheduleJSON, 0, len(infos))
		for _, si := range infos {
			out = append(out, scheduleJSON{Name: si.Name, Spec: si.Spec, Queue: si.Queue, Type: si.Type,
				Missed: si.Missed, LastRun: si.LastRun, NextRun: si.NextRun})
		}
		return writeJSON(m.Stdout, out)
	}
	t := newTable(column{head: "SCHEDULE", cut: true}, column{head: "SPEC", cut: true}, column{head: "QUEUE", cut: true},
		column{head: "TYPE", cut: true}, column{head: "LAST"}, column{head: "NEXT"})
	now := time.Now()
	for _, si := range infos {
		t.add(si.Name, si.Spec, si.Queue, si.Type, ago(si.LastRun, now), ago(si.NextRun, now))
	}
	t.write(m.Stdout)
	return nil
}
