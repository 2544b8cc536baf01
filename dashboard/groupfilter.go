package dashboard

import (
	"strings"

	"github.com/shardq/shardq/internal/inspect"
)

// Redis keeps no index of a queue's listings by group, so the group
// filter of a queue's tabs (TaskQuery.Group) is a filter over the
// listing, bounded as a search is: it reads at most groupScan tasks per
// page, and a page may hold fewer than its limit before the end; its next
// link reads on from where it stopped.
const groupScan = inspect.MaxSearchScan

// groupParam reads the group filter of a listing, "" for none.
func groupParam(v string) string { return strings.TrimSpace(v) }
