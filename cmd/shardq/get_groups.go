package main

import (
	"context"
	"fmt"

	"github.com/shardq/shardq/queue"
)

// getGroups lists a page of a queue's groups, most tasks waiting first.
func getGroups(ctx context.Context, m *Main, s *session, f *getFlags, _ []string) error {
	page, err := s.insp.Groups(ctx, queue.GroupQuery{Queue: f.queue, After: f.after, Limit: f.limit})
	if err != nil {
		return s.explain(ctx, err, f.queue)
	}
	w, err := s.work(ctx, f.queue)
	if err != nil {
		return s.explain(ctx, err, f.queue)
	}
	if f.out.json() {
		out := struct {
			Groups []groupJSON `json:"groups"`
			Next   string      `json:"next"`
		}{Groups: make([]groupJSON, 0, len(page.Groups)), Next: page.Next}
		for _, g := range page.Groups {
			out.Groups = append(out.Groups, newGroupJSON(g, w))
		}
		return writeJSON(m.Stdout, out)
	}
	t := newTable(column{head: "GROUP", cut: true}, num("WAITING"), num("RUNNING"), num("AHEAD"), num("WEIGHT"), column{head: "PAUSED"})
	for _, g := range page.Groups {
		v := newGroupJSON(g, w)
		t.add(v.Group, itoa(v.Waiting), itoa(v.Running), itoa(v.Ahead), itoa(int64(v.Weight)), yesNo(v.Paused))
	}
	t.write(m.Stdout)
	if page.Next != "" {
		fmt.Fprintf(m.Stderr, "more: add --after %s\n", page.Next)
	}
	return nil
}
