package main

import "context"

// describeGroup shows a group of a queue: its tasks waiting and running,
// its weight and whether it is paused. A group with no task has them too,
// so a paused one shows as paused.
func describeGroup(ctx context.Context, m *Main, s *session, q, name string, asJSON bool) error {
	g, err := s.insp.GetGroup(ctx, q, name)
	if err != nil {
		return s.explain(ctx, err, q)
	}
	if asJSON {
		return writeJSON(m.Stdout, newGroupJSON(*g))
	}
	var f fields
	f.add("Group", g.Group)
	f.add("Queue", q)
	f.add("Waiting", itoa(g.Waiting))
	f.add("Running", itoa(g.Running))
	f.add("Weight", itoa(int64(g.Weight)))
	f.add("Paused", yesNo(g.Paused))
	f.write(m.Stdout)
	return nil
}
