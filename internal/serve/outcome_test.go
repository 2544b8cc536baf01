package serve

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestSettleWakesLimitedFetcher: outcomes written by any round trip (the
// flusher's, or another partition's fetcher carrying them) free their
// concurrency-limit holds, so settling them signals their partition's
// fetcher, which may wait at the limit.
func TestSettleWakesLimitedFetcher(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s, p := unstarted(t, b, succeed)
	drain(p.freed)
	cmd := redis.NewCmd(context.Background())
	cmd.SetVal([]any{int64(1)})
	groups := []outcomeGroup{{p: p, kind: outcomeAck, items: []outcome{{p: p, id: "x", token: 1}}, cmd: cmd}}
	if failed, err := s.settle(groups); err != nil || len(failed) != 0 {
		t.Fatalf("settle: %v, %v", failed, err)
	}
	select {
	case <-p.freed:
	default:
		t.Fatal("settling written outcomes did not signal their partition")
	}
}

// TestAppendAcksOfOneWorkflow: acks of one workflow's nodes, with no
// retention and no uniqueness ID, give the workflow's key once and three
// fields per task; anything else in the batch takes seven.
func TestAppendAcksOfOneWorkflow(t *testing.T) {
	t.Parallel()
	node := func(w, x string) outcome { return outcome{id: "id-" + x, token: 1, flow: "ref", workflow: w, node: x} }
	show := func(args []any) string {
		var out []string
		for _, a := range args {
			switch v := a.(type) {
			case *string:
				out = append(out, *v)
			case *int64:
				out = append(out, fmt.Sprint(*v))
			default:
				out = append(out, fmt.Sprint(v))
			}
		}
		return strings.Join(out, " ")
	}
	one := []outcome{node("W1", "a"), node("W1", "b")}
	if got, want := show(appendAcks(nil, one)), "3 W1 id-a 1 a id-b 1 b"; got != want {
		t.Fatalf("one workflow: %q, want %q", got, want)
	}
	two := []outcome{node("W1", "a"), node("W2", "b")}
	if got, want := show(appendAcks(nil, two)), "7 id-a 1 0  ref W1 a id-b 1 0  ref W2 b"; got != want {
		t.Fatalf("two workflows: %q, want %q", got, want)
	}
	kept := []outcome{node("W1", "a"), node("W1", "b")}
	kept[1].retentionMS = 5
	if got, want := show(appendAcks(nil, kept)), "7 id-a 1 0  ref W1 a id-b 1 5  ref W1 b"; got != want {
		t.Fatalf("a node kept: %q, want %q", got, want)
	}
	mixed := []outcome{node("W1", "a"), {id: "plain", token: 2}}
	if got, want := show(appendAcks(nil, mixed)), "7 id-a 1 0  ref W1 a plain 2 0    "; got != want {
		t.Fatalf("a node and a plain task: %q, want %q", got, want)
	}
}
