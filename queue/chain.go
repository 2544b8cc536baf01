package queue

import (
	"fmt"
	"strconv"
)

// Chain returns a workflow that runs tasks one after another: the nodes
// are named by their place, "1" to "n", and each waits for the one
// before it over an EdgeFail edge. Enqueue it with
// Client.EnqueueWorkflow. A link that goes dead fails the links after it
// until it is retried; worker.Task.PreviousResult reads the result of the
// link before. An empty chain is ErrInvalid from EnqueueWorkflow.
func Chain(tasks ...*Task) *Workflow {
	w := NewWorkflow()
	if len(tasks) == 0 {
		w.err = fmt.Errorf("%w: empty chain", errInvalidWorkflow)
		return w
	}
	w.Add("1", tasks[0])
	for k, t := range tasks[1:] {
		w.Add(strconv.Itoa(k+2), t, After(strconv.Itoa(k+1)))
	}
	return w
}
