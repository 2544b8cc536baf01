package keys

// QuotaHome is where a partitioned queue's fleet-wide limits are kept and
// split into per-partition quotas: a slot of its own, tag
// {<prefix>:<queue>:quota} (a partition's tag ends in a number, so none
// can be this one).
type QuotaHome struct {
	T string
}

// QuotaFor returns the quota home of queue under prefix.
func QuotaFor(prefix, queue string) QuotaHome {
	return QuotaHome{T: "{" + prefix + ":" + queue + ":quota}"}
}

// Quota is the hash of the fleet-wide limits (conc, rate, per) and each
// partition's recorded quotas (c:<n>, r:<n>).
func (h QuotaHome) Quota() string { return h.T + ":quota" }

// Lock is held by the one rebalance under way; its value is the epoch.
func (h QuotaHome) Lock() string { return h.T + ":lock" }

// Epoch counts rebalances: each takes the next, and partitions refuse an
// older one's changes.
func (h QuotaHome) Epoch() string { return h.T + ":epoch" }

// QuotaEpoch is the newest rebalance epoch partition p has seen: it
// refuses quota changes of any other (lua/engine/quota_report.lua, quota_set.lua).
func (p Partition) QuotaEpoch() string { return p.T + ":qepoch" }
