package dashboard

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shardq/shardq/queue"
)

// FuzzTaskView: the API's view of a task whose payload and step value are
// any bytes, msgpack or raw, malformed or not, is made without a panic or
// a fatal allocation, and encoding/json writes it.
func FuzzTaskView(f *testing.F) {
	for _, b := range [][]byte{
		{0xdd, 0xff, 0xff, 0xff, 0xff}, {0xdf, 0xff, 0xff, 0xff, 0xff}, {0xc6, 0xff, 0xff, 0xff, 0xff},
		{0xd7, 0xff, 0xdf, 0xff, 0xff, 0xff, 0xff, 0, 0, 0}, {0x82, 0x01, 0x01, 0x91, 0x01, 0x02},
		{0x81, 0xa1, 'a', 0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 1}, []byte(`{"a":[1,2]}`), []byte("\xff\xfe"),
	} {
		f.Add(b, false, false)
		f.Add(b, true, false)
		f.Add(b, false, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, raw, malformed bool) {
		ti := &queue.TaskInfo{ID: "id", Queue: "q", Type: "t", Payload: b, Raw: raw, Malformed: malformed,
			Steps: []queue.StepInfo{{Name: "s", Value: b}}, Result: b, HasResult: true}
		v := newTaskView(ti)
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("the view of % x does not encode: %v", b[:min(len(b), 16)], err)
		}
	})
}

// FuzzTaskViewWorkflow: a task's workflow and node, which come from its
// message's flow ref, read in the API's view as given, whatever their
// bytes: a node links its workflow, and a batch's member names the batch
// too.
func FuzzTaskViewWorkflow(f *testing.F) {
	for _, seed := range [][2]string{{"", ""}, {"wf", "n1"}, {"batch", ".AZLrQt8TcjSSGH2gYZ3Q9g"}, {"c", "3"}, {"\xff", "."}, {"wf", ""}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, workflow, node string) {
		v := newTaskView(&queue.TaskInfo{ID: "id", Queue: "q", Type: "t", WorkflowID: workflow, Node: node})
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("the view of workflow %q node %q does not encode: %v", workflow, node, err)
		}
		if (workflow != "") != (v.Flow != nil) || v.Flow != nil && (v.Flow.WorkflowID != workflow || v.Flow.Node != node ||
			(v.Flow.BatchID != "") != strings.HasPrefix(node, ".")) {
			t.Fatalf("workflow %q node %q: view %+v", workflow, node, v.Flow)
		}
	})
}
