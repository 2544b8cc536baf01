package dashboard

import (
	"fmt"
	"time"

	"github.com/shardq/shardq/queue"
)

// The chart's drawing area, in SVG user units; CSS scales it.
const (
	chartW, chartH = 1200, 190
	chartLeft      = 48 // room for the y axis labels
	chartTop       = 22 // room for the unit above the top label
	chartBottom    = 22 // room for the x axis labels
)

// minBarH is the least height, in SVG units (about a pixel each at the
// usual width), of a bar's part that counts anything: 40 failures beside
// 20,000 successes would otherwise be a fraction of a pixel, invisible.
// The parts stay to scale above it; a part raised to it is marked
// (Raised) and the legend says that small counts are drawn taller.
const minBarH = 3

// chart is a throughput history ready to draw as inline SVG: one stacked
// bar per step, succeeded below failed, with a tooltip each.
type chart struct {
	W, H      int
	Left      int
	PlotTop   float64
	PlotH     float64
	Bars      []chartBar
	XLabels   []chartLabel
	YLabels   []chartLabel
	Gridlines []float64
	Span      string
	Succeeded int64
	Failed    int64
	Empty     bool
	// Per names the step the bars count over ("minute", "hour"): the y
	// axis is tasks per Per.
	Per string
	// Raised says some bar part was drawn at minBarH, taller than its
	// count's scale.
	Raised bool
	MinBar int
}

type chartBar struct {
	X, W           float64
	OKY, OKH       float64
	FailY, FailH   float64
	Title          string
	Succeeded, Err int64
	// Raised says a part of this bar is drawn at minBarH.
	Raised bool
}

type chartLabel struct {
	X, Y float64
	Text string
}

// newChart lays out h.
func newChart(h *queue.History) chart {
	plotW := float64(chartW - chartLeft)
	plotH := float64(chartH - chartBottom - chartTop)
	c := chart{W: chartW, H: chartH, Left: chartLeft, PlotTop: chartTop, PlotH: plotH, Span: spanName(h.Span), Per: stepName(h.Step), MinBar: minBarH}
	bottom := float64(chartTop) + plotH
	var top int64
	for _, p := range h.Points {
		top = max(top, p.Succeeded+p.Failed)
		c.Succeeded += p.Succeeded
		c.Failed += p.Failed
	}
	c.Empty = top == 0
	top = niceCeil(max(top, 1))
	slot := plotW / float64(max(len(h.Points), 1))
	scale := func(n int64) float64 { return float64(n) / float64(top) * plotH }
	for i, p := range h.Points {
		x := float64(chartLeft) + float64(i)*slot
		okH, okRaised := visible(scale(p.Succeeded), p.Succeeded)
		failH, failRaised := visible(scale(p.Failed), p.Failed)
		if over := okH + failH - plotH; over > 0 {
			okH -= over // a raised failure on a full bar: the bar stays in the plot
		}
		raised := okRaised || failRaised
		c.Raised = c.Raised || raised
		title := fmt.Sprintf("%s: %s tasks succeeded, %s attempts failed", stepLabel(p.Start, h.Step), num(p.Succeeded), num(p.Failed))
		if raised {
			title += " (a small count drawn taller than to scale, to be seen)"
		}
		c.Bars = append(c.Bars, chartBar{
			X: round1(x + slot*0.1), W: round1(slot * 0.8),
			OKY: round1(bottom - okH), OKH: round1(okH),
			FailY: round1(bottom - okH - failH), FailH: round1(failH),
			Title: title, Succeeded: p.Succeeded, Err: p.Failed, Raised: raised,
		})
		if every := labelEvery(h.Span); i%every == 0 {
			c.XLabels = append(c.XLabels, chartLabel{X: round1(x), Y: chartH - 6, Text: p.Start.UTC().Format("15:04")})
		}
	}
	for _, f := range []float64{0, 0.5, 1} {
		y := round1(bottom - f*plotH)
		c.Gridlines = append(c.Gridlines, y)
		c.YLabels = append(c.YLabels, chartLabel{X: chartLeft - 8, Y: y + 4, Text: num(int64(f * float64(top)))})
	}
	return c
}

// visible returns the height to draw a count of n at, h to scale: at
// least minBarH when n is not 0, and whether it was raised to it.
func visible(h float64, n int64) (float64, bool) {
	if n > 0 && h < minBarH {
		return minBarH, true
	}
	return h, false
}

// stepName names a history's step for the y axis: tasks per minute, or
// per hour.
func stepName(step time.Duration) string {
	switch step {
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	}
	return step.String()
}

func labelEvery(s time.Duration) int {
	if s == 24*time.Hour {
		return 4
	}
	return 10
}

func stepLabel(t time.Time, step time.Duration) string {
	return t.UTC().Format("15:04") + "–" + t.Add(step).UTC().Format("15:04 UTC")
}

// niceCeil rounds n up to 1, 2 or 5 times a power of ten (never below 2,
// so the middle gridline is a whole number).
func niceCeil(n int64) int64 {
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if v := m * p; v >= n && v >= 2 {
				return v
			}
		}
	}
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }
