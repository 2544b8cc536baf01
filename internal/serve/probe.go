package serve

// Probe is told of the instants the crash-safety table names, so tests
// can act there: the crash tests run a worker in a child process that
// kills itself at one of them, and BeforeTake lets a test gather
// outcomes into one batch. Engine.probe is noProbe outside tests, so the
// hot path makes a call that does nothing rather than checking a hook.
// Tests embed NoProbe and override what they watch.
type Probe interface {
	AfterMove()         // a blocking move put an item in flight; no claim yet
	AfterClaim()        // tasks were leased; no handler started yet
	LeasedAhead(n int)  // a pop leased n tasks ahead of the free slots (prefetch)
	BeforeAck()         // a handler returned nil; its ack is not written yet
	BeforeExtend()      // a heartbeat listed its running tasks; their leases are not extended yet
	AfterFlowOutcome()  // a workflow task's outcome is in T:notify; not forwarded yet
	BeforeFlowDeliver() // notifications made outbox entries due; not delivered yet
	// BeforeTake: outcomes waiting to be written are about to be taken,
	// by a fetcher's pop (pop) or by the flusher
	BeforeTake(pop bool)
}

// NoProbe is the probe of an engine outside tests: it does nothing.
type NoProbe struct{}

func (NoProbe) AfterMove()         {}
func (NoProbe) AfterClaim()        {}
func (NoProbe) LeasedAhead(int)    {}
func (NoProbe) BeforeAck()         {}
func (NoProbe) BeforeExtend()      {}
func (NoProbe) AfterFlowOutcome()  {}
func (NoProbe) BeforeFlowDeliver() {}
func (NoProbe) BeforeTake(bool)    {}

// noProbe is the engine's probe outside tests.
type noProbe = NoProbe

// ProbeFuncs is a probe for tests: it calls the funcs that are set.
type ProbeFuncs struct {
	OnAfterMove         func()
	OnAfterClaim        func()
	OnLeasedAhead       func(n int)
	OnBeforeAck         func()
	OnBeforeExtend      func()
	OnAfterFlowOutcome  func()
	OnBeforeFlowDeliver func()
	OnBeforeTake        func(pop bool)
}

func (f *ProbeFuncs) AfterMove() { call(f.OnAfterMove) }

func (f *ProbeFuncs) AfterClaim() { call(f.OnAfterClaim) }

func (f *ProbeFuncs) LeasedAhead(n int) {
	if f.OnLeasedAhead != nil {
		f.OnLeasedAhead(n)
	}
}

func (f *ProbeFuncs) BeforeAck() { call(f.OnBeforeAck) }

func (f *ProbeFuncs) BeforeExtend() { call(f.OnBeforeExtend) }

func (f *ProbeFuncs) AfterFlowOutcome() { call(f.OnAfterFlowOutcome) }

func (f *ProbeFuncs) BeforeFlowDeliver() { call(f.OnBeforeFlowDeliver) }

func (f *ProbeFuncs) BeforeTake(pop bool) {
	if f.OnBeforeTake != nil {
		f.OnBeforeTake(pop)
	}
}

// call calls f, unless it is nil.
func call(f func()) {
	if f != nil {
		f()
	}
}
