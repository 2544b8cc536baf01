package worker

import "github.com/shardq/shardq/internal/serve"

// setProbe gives s's engine probe p; call it before Start.
func setProbe(s *Server, p serve.Probe) { s.engine.SetProbe(p) }

// storedID returns the ID of a running task as the scripts have it.
func storedID(t *Task) string { return t.job.StoredID() }
