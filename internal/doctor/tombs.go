package doctor

import (
	"context"
	"fmt"
)

// staleTombstones finds the tombstones (T:tomb) of tasks in no pending
// list. DeleteTask marks a pending task there, and the dequeue that
// reaches it drops both; a tombstone whose task is in no list is never
// reached, so it stays, makes the pending count one lower than the lists
// hold, and drops a later task that takes the same ID (a TaskID).
func staleTombstones(ctx context.Context, a *audit, f *Finding) error {
	for _, p := range a.parts {
		want := map[string]bool{}
		var cursor uint64
		for {
			ids, next, err := a.rdb.SScan(ctx, p.k.Tomb(), cursor, "", int64(a.opt.Page)).Result()
			if err != nil {
				return err
			}
			for _, id := range ids {
				want[id] = true
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
		// look twice, the second time in the lists written since
		for try := 0; try < 2 && len(want) > 0; try++ {
			if try == 1 {
				if err := a.rescan(ctx, p); err != nil {
					return err
				}
			}
			err := a.pendingEntries(ctx, p, false, func(ents []entry) error {
				for _, e := range ents {
					delete(want, e.id)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		for id := range want {
			still, err := a.rdb.SIsMember(ctx, p.k.Tomb(), id).Result()
			if err != nil {
				return err
			}
			if !still {
				continue // a dequeue reached it meanwhile
			}
			a.add(f, fmt.Sprintf("%s %s", p.where(), public(id)))
			if a.opt.Repair {
				n, err := a.rdb.SRem(ctx, p.k.Tomb(), id).Result()
				if err != nil {
					return err
				}
				f.Repaired += int(n)
			}
		}
	}
	return nil
}
