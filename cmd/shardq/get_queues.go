package main

import "context"

// getQueues lists every queue, or those named, with its tasks per state.
func getQueues(ctx context.Context, m *Main, s *session, f *getFlags, names []string) error {
	for _, n := range names {
		if err := checkQueueName(n); err != nil {
			return usageErr("%v", err)
		}
	}
	infos, err := s.insp.QueueInfos(ctx, names...)
	if err != nil {
		q := ""
		if len(names) == 1 {
			q = names[0]
		}
		return s.explain(ctx, err, q)
	}
	if len(infos) == 0 {
		if err := s.nothing(ctx); err != nil {
			return err
		}
	}
	if f.out.json() {
		out := make([]queueJSON, len(infos))
		for i, qi := range infos {
			out[i] = newQueueJSON(qi)
		}
		return writeJSON(m.Stdout, out)
	}
	t := newTable(column{head: "QUEUE", cut: true}, num("PENDING"), num("ACTIVE"), num("SCHEDULED"), num("RETRY"),
		num("DEAD"), num("SUCCEEDED"), column{head: "PAUSED"})
	for _, qi := range infos {
		t.add(qi.Queue, itoa(qi.Pending), itoa(qi.Active), itoa(qi.Scheduled), itoa(qi.Retry), itoa(qi.Dead),
			itoa(qi.Succeeded), yesNo(qi.Paused))
	}
	t.write(m.Stdout)
	return nil
}

// num is a column of numbers, aligned right.
func num(head string) column { return column{head: head, right: true} }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "-"
}
