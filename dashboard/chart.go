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
	chartTop       = 10 // room for the top label
	chartBottom    = 22 // room for the x axis labels
)

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
}

type chartBar struct {
	X, W           float64
	OKY, OKH       float64
	FailY, FailH   float64
	Title          string
	Succeeded, Err int64
}

type chartLabel struct {
	X, Y float64
	Text string
}

// newChart lays out h.
func newChart(h *queue.History) chart {
	plotW := float64(chartW - chartLeft)
	plotH := float64(chartH - chartBottom - chartTop)
	c := chart{W: chartW, H: chartH, Left: chartLeft, PlotTop: chartTop, PlotH: plotH, Span: spanName(h.Span)}
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
		okH, failH := scale(p.Succeeded), scale(p.Failed)
		c.Bars = append(c.Bars, chartBar{
			X: round1(x + slot*0.1), W: round1(slot * 0.8),
			OKY: round1(bottom - okH), OKH: round1(okH),
			FailY: round1(bottom - okH - failH), FailH: round1(failH),
			Title:     fmt.Sprintf("%s: %d processed, %d failed", stepLabel(p.Start, h.Step), p.Succeeded+p.Failed, p.Failed),
			Succeeded: p.Succeeded, Err: p.Failed,
		})
		if every := labelEvery(h.Span); i%every == 0 {
			c.XLabels = append(c.XLabels, chartLabel{X: round1(x), Y: chartH - 6, Text: p.Start.UTC().Format("15:04")})
		}
	}
	for _, f := range []float64{0, 0.5, 1} {
		y := round1(bottom - f*plotH)
		c.Gridlines = append(c.Gridlines, y)
		c.YLabels = append(c.YLabels, chartLabel{X: chartLeft - 8, Y: y + 4, Text: fmt.Sprint(int64(f * float64(top)))})
	}
	return c
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
