package dashboard

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shardq/shardq/queue"
)

// apiScaling serves a queue's autoscaling figure (queue.Scaling) as JSON,
// in the shape KEDA's metrics-api scaler reads: valueLocation
// "desiredWorkers", targetValue "1" (docs/autoscaling.md). Query
// parameters set the formula's inputs: drain and window (durations),
// concurrency and max (workers).
func (d *server) apiScaling(w http.ResponseWriter, r *http.Request) {
	sq, err := scalingQuery(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	sc, err := d.insp.Scaling(r.Context(), sq)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, scalingView{Scaling: sc, Formula: formula(sc)})
}

// scalingView is the JSON of a queue.Scaling, with its formula.
type scalingView struct {
	*queue.Scaling
	Formula string `json:"formula"`
}

// scalingQuery reads the formula's inputs from the query.
func scalingQuery(r *http.Request) (queue.ScalingQuery, error) {
	sq := queue.ScalingQuery{Queue: r.PathValue("queue")}
	q := r.URL.Query()
	for name, set := range map[string]*time.Duration{"drain": &sq.DrainTime, "window": &sq.RateWindow} {
		if v := q.Get(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return sq, fmt.Errorf("%w: %s=%q: want a duration such as 1m", errBadRequest, name, v)
			}
			*set = d
		}
	}
	for name, set := range map[string]*int{"concurrency": &sq.Concurrency, "max": &sq.MaxWorkers} {
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || (n == 0 && name == "concurrency") {
				return sq, fmt.Errorf("%w: %s=%q: want a whole number", errBadRequest, name, v)
			}
			*set = n
		}
	}
	return sq, nil
}

// formula returns the figure's formula with the queue's inputs, for the
// queue page and the JSON.
func formula(s *queue.Scaling) string {
	var b strings.Builder
	fmt.Fprintf(&b, "needed = λ·S + B·S/T = %.2f/s × %v + %d × %v / %v = %.2f handlers; ",
		s.ArrivalRate, s.MeanHandlerTime.Round(time.Microsecond), s.Backlog,
		s.MeanHandlerTime.Round(time.Microsecond), s.DrainTime, s.NeededConcurrency)
	fmt.Fprintf(&b, "desired = ceil(needed / C) = ceil(%.2f / %d) → %d worker",
		s.NeededConcurrency, s.WorkerConcurrency, s.DesiredWorkers)
	if s.DesiredWorkers != 1 {
		b.WriteString("s")
	}
	if s.MeanHandlerTime == 0 && s.Backlog+s.Running > 0 {
		b.WriteString(" (handler time unknown yet: one worker to learn it)")
	}
	if s.MaxWorkers > 0 {
		fmt.Fprintf(&b, ", at most %d", s.MaxWorkers)
	}
	return b.String()
}
