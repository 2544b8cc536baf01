package doctor

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// finishedNode is the set of node states (a letter, include/wf_names.lua)
// in which a node has finished: succeeded, dead, failed, skipped, cancelled.
var finishedNode = map[byte]bool{'s': true, 'd': true, 'f': true, 'k': true, 'x': true}

// waitingNodes finds the workflow nodes still waiting ('w') though every
// parent they have finished: the outcome that should have released, failed
// or skipped them was lost. A node's parents are read from its parents'
// children lists (c:<name>); a batch's join nodes keep no field per edge,
// so a node none lists as a child is not judged.
func waitingNodes(ctx context.Context, a *audit, f *Finding) error {
	for _, key := range a.flows {
		for try := 0; ; try++ {
			stuck, err := a.stuckNodes(ctx, key)
			if err != nil {
				return err
			}
			if len(stuck) == 0 {
				break
			}
			if try == 1 {
				for _, n := range stuck {
					a.add(f, fmt.Sprintf("%s node %q", key, n))
				}
				break
			}
			// a second read: a workflow's home may be applying an outcome
		}
	}
	return nil
}

// stuckNodes reads workflow key and returns its waiting nodes whose parents
// all finished.
func (a *audit) stuckNodes(ctx context.Context, key string) ([]string, error) {
	state := map[string]byte{}
	parents := map[string][]string{}
	err := a.hscan(ctx, key, func(fs, vs []string) error {
		for i, fld := range fs {
			switch {
			case strings.HasPrefix(fld, "s:") && vs[i] != "":
				state[fld[2:]] = vs[i][0]
			case strings.HasPrefix(fld, "c:"):
				for _, c := range strings.Fields(vs[i]) {
					if len(c) > 1 {
						parents[c[1:]] = append(parents[c[1:]], fld[2:])
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for node, st := range state {
		if st != 'w' || len(parents[node]) == 0 {
			continue
		}
		all := true
		for _, p := range parents[node] {
			if !finishedNode[state[p]] {
				all = false
				break
			}
		}
		if all {
			out = append(out, node)
		}
	}
	sort.Strings(out)
	return out, nil
}
