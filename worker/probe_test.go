package worker

// probeFuncs is a probe for tests: it calls the funcs that are set.
type probeFuncs struct {
	onAfterMove         func()
	onAfterClaim        func()
	onLeasedAhead       func(n int)
	onBeforeAck         func()
	onBeforeExtend      func()
	onAfterFlowOutcome  func()
	onBeforeFlowDeliver func()
	onBeforeTake        func(pop bool)
}

func (f *probeFuncs) afterMove() {
	if f.onAfterMove != nil {
		f.onAfterMove()
	}
}

func (f *probeFuncs) afterClaim() {
	if f.onAfterClaim != nil {
		f.onAfterClaim()
	}
}

func (f *probeFuncs) leasedAhead(n int) {
	if f.onLeasedAhead != nil {
		f.onLeasedAhead(n)
	}
}

func (f *probeFuncs) beforeAck() {
	if f.onBeforeAck != nil {
		f.onBeforeAck()
	}
}

func (f *probeFuncs) beforeExtend() {
	if f.onBeforeExtend != nil {
		f.onBeforeExtend()
	}
}

func (f *probeFuncs) afterFlowOutcome() {
	if f.onAfterFlowOutcome != nil {
		f.onAfterFlowOutcome()
	}
}

func (f *probeFuncs) beforeFlowDeliver() {
	if f.onBeforeFlowDeliver != nil {
		f.onBeforeFlowDeliver()
	}
}

func (f *probeFuncs) beforeTake(pop bool) {
	if f.onBeforeTake != nil {
		f.onBeforeTake(pop)
	}
}
