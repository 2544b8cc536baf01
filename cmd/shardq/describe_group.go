package main

import "context"

// describeGroup shows a group of a queue: its tasks waiting, running and
// leased ahead, its weight and whether it is paused. A group with no task
// has them too, so a paused one shows as paused.
func describeGroup(ctx context.Context, m *Main, s *session, q, name string, asJSON bool) error {
	g, err := s.insp.GetGroup(ctx, q, name)
	if err != nil {
		return s.explain(ctx, err, q)
	}
	w, err := s.work(ctx, q)
	if err != nil {
		return s.explain(ctx, err, q)
	}
	v := newGroupJSON(*g, w)
	if asJSON {
		return writeJSON(m.Stdout, v)
	}
	var f fields
	f.add("Group", g.Group)
	f.add("Queue", q)
	f.add("Waiting", itoa(v.Waiting))
	f.add("Running", itoa(v.Running))
	f.add("Ahead", itoa(v.Ahead)+" (leased ahead, waiting in a worker)")
	f.add("Weight", itoa(int64(g.Weight)))
	f.add("Paused", yesNo(g.Paused))
	f.write(m.Stdout)
	return nil
}
