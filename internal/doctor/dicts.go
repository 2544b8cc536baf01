package doctor

import (
	"context"
	"strings"
)

// unusedDictionaries finds the compression dictionaries (<prefix>:dict:<id>)
// that no task type names in <prefix>:dicts: a producer that lost the race
// to claim a type stored one that no producer compresses with. They never
// expire (internal/dicts), so they stay until deleted; the doctor leaves
// them, as it cannot tell that no stored payload names one without reading
// every payload.
func unusedDictionaries(ctx context.Context, a *audit, f *Finding) error {
	if len(a.dicts) == 0 {
		return nil
	}
	named, err := a.rdb.HVals(ctx, a.opt.Prefix+":dicts").Result()
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for _, id := range named {
		used[id] = true
	}
	for _, k := range a.dicts {
		if id := strings.TrimPrefix(k, a.opt.Prefix+":dict:"); !used[id] {
			a.add(f, k)
		}
	}
	return nil
}
