package doctor

import "github.com/shardq/shardq/internal/keys"

// workersKey is <prefix>:workers.
func workersKey(a *audit) string { return keys.Workers(a.opt.Prefix) }

// registryKey is <prefix>:queues.
func registryKey(a *audit) string { return keys.Queues(a.opt.Prefix) }
