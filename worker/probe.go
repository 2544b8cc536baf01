package worker

// probe is told of the instants the crash-safety table names, so tests
// can act there: the crash tests run a worker in a child process that
// kills itself at one of them, and beforeTake lets a test gather
// outcomes into one batch. Server.probe is noProbe outside tests, so the
// hot path makes a call that does nothing rather than checking a hook.
type probe interface {
	afterMove()         // a blocking move put an item in flight; no claim yet
	afterClaim()        // tasks were leased; no handler started yet
	leasedAhead(n int)  // a pop leased n tasks ahead of the free slots (prefetch)
	beforeAck()         // a handler returned nil; its ack is not written yet
	beforeExtend()      // a heartbeat listed its running tasks; their leases are not extended yet
	afterFlowOutcome()  // a flow task's outcome is in T:notify; not forwarded yet
	beforeFlowDeliver() // notifications made outbox entries due; not delivered yet
	// beforeTake: outcomes waiting to be written are about to be taken,
	// by a fetcher's pop (pop) or by the flusher
	beforeTake(pop bool)
}

// noProbe is the probe of a server outside tests: it does nothing.
type noProbe struct{}

func (noProbe) afterMove()         {}
func (noProbe) afterClaim()        {}
func (noProbe) leasedAhead(int)    {}
func (noProbe) beforeAck()         {}
func (noProbe) beforeExtend()      {}
func (noProbe) afterFlowOutcome()  {}
func (noProbe) beforeFlowDeliver() {}
func (noProbe) beforeTake(bool)    {}
