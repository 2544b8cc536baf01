package dashboard

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/shardq/shardq/queue"
)

// apiScaling serves a queue's autoscaling figure (queue.Scaling) as JSON,
// in the shape KEDA's metrics-api scaler reads: valueLocation
// "desiredWorkers", targetValue "1" (docs/autoscaling.md). Query
// parameters set the formula's inputs: drain and window (durations),
// concurrency and max (workers).
func (d *Dashboard) apiScaling(w http.ResponseWriter, r *http.Request) {
	opts, err := scalingOptions(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	sc, err := d.insp.Scaling(r.Context(), r.PathValue("queue"), opts...)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, scalingView{Scaling: sc, Formula: sc.Formula()})
}

// scalingView is the JSON of a queue.Scaling, with its formula.
type scalingView struct {
	*queue.Scaling
	Formula string `json:"formula"`
}

// scalingOptions reads the formula's inputs from the query.
func scalingOptions(r *http.Request) ([]queue.ScalingOption, error) {
	var opts []queue.ScalingOption
	q := r.URL.Query()
	for name, set := range map[string]func(time.Duration) queue.ScalingOption{
		"drain": queue.ScaleDrainTime, "window": queue.ScaleRateWindow} {
		if v := q.Get(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return nil, fmt.Errorf("%w: %s=%q: want a duration such as 1m", errBadRequest, name, v)
			}
			opts = append(opts, set(d))
		}
	}
	for name, set := range map[string]func(int) queue.ScalingOption{
		"concurrency": queue.ScaleConcurrency, "max": queue.ScaleMaxWorkers} {
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("%w: %s=%q: want a whole number", errBadRequest, name, v)
			}
			opts = append(opts, set(n))
		}
	}
	return opts, nil
}
