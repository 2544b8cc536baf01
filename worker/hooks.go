package worker

// hooks are test seams at the instants the crash-safety table names; the
// crash tests run a worker in a child process that kills itself there.
// beforeTake lets a test gather outcomes into one batch. All are nil
// outside tests.
type hooks struct {
	afterMove  func() // a blocking move put an item in flight; no claim yet
	afterClaim func() // tasks were leased; no handler started yet
	// a pop leased n tasks ahead of the free slots (prefetch); they wait
	// in the worker
	leasedAhead func(n int)
	beforeAck   func() // a handler returned nil; its ack is not written yet
	// a heartbeat took its list of running tasks; their leases are not
	// extended yet
	beforeExtend func()
	// a flow task's outcome was written (its notification is in T:notify);
	// it is not forwarded yet
	afterFlowOutcome func()
	// notifications were forwarded and made outbox entries due (next
	// links, callbacks); they are not delivered yet
	beforeFlowDeliver func()
	// outcomes waiting to be written are about to be taken, by a
	// fetcher's pop (pop) or by the flusher
	beforeTake func(pop bool)
}
