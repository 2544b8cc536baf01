package keys

import (
	"strings"
	"testing"
)

func TestEveryPartitionKeySharesTheTag(t *testing.T) {
	p := For("shardq", "email", 3)
	if p.T != "{shardq:email:3}" {
		t.Fatalf("tag %q", p.T)
	}
	for _, k := range []string{p.First(), p.Last(), p.ShardPrefix() + "7", p.Msg(), p.State(), p.Active(),
		p.Inflight("w1"), p.Scheduled(), p.Retry(), p.Feed(), RankKey(p.Feed()), p.FeedMsg(), p.Done(),
		RankKey(p.Done()), p.Dead(), RankKey(p.Dead()), p.Paused()} {
		if !strings.HasPrefix(k, p.T+":") {
			t.Errorf("key %q does not start with the partition tag", k)
		}
	}
}
