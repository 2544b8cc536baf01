package dashboard

import (
	"testing"
	"time"

	"github.com/shardq/shardq/queue"
)

// TestChartSmallCounts: 40 failed attempts beside 20,000 successes get a
// visible part, marked raised; the large parts stay to scale and no bar
// leaves the plot; a step of nothing draws nothing.
func TestChartSmallCounts(t *testing.T) {
	t.Parallel()
	h := &queue.History{Span: time.Hour, Step: time.Minute, Points: make([]queue.HistoryPoint, 60)}
	for j := range h.Points {
		h.Points[j].Start = time.Unix(int64(j)*60, 0)
	}
	h.Points[10] = queue.HistoryPoint{Start: h.Points[10].Start, Succeeded: 20_000, Failed: 40}
	h.Points[20] = queue.HistoryPoint{Start: h.Points[20].Start, Succeeded: 10_000}
	c := newChart(h)
	full, half, none := c.Bars[10], c.Bars[20], c.Bars[30]
	if full.FailH < minBarH || !full.Raised || !c.Raised {
		t.Fatalf("40 failures beside 20,000: drawn %v tall, raised %v", full.FailH, full.Raised)
	}
	if full.OKH+full.FailH > c.PlotH+0.1 {
		t.Fatalf("the bar is %v tall in a plot of %v", full.OKH+full.FailH, c.PlotH)
	}
	// the axis tops at 50,000 (20,040 rounded up): 10,000 is a fifth
	if half.Raised || half.OKH != round1(c.PlotH/5) || half.FailH != 0 {
		t.Fatalf("10,000 of a 50,000 top: %+v, plot %v", half, c.PlotH)
	}
	if none.OKH != 0 || none.FailH != 0 || none.Raised {
		t.Fatalf("an empty step draws %+v", none)
	}
	if c.Per != "minute" || newChart(&queue.History{Span: 24 * time.Hour, Step: time.Hour}).Per != "hour" {
		t.Fatalf("the y axis unit: %q", c.Per)
	}
}
