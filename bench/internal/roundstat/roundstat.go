// Package roundstat holds the small figures both the bench and its old/new
// comparison compute from rounds.
package roundstat

import "slices"

// Median returns the median of vs (the mean of the middle two when even);
// vs is not reordered.
func Median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Union returns a's items in order, then those of b that a lacks.
func Union[T comparable](a, b []T) []T {
	out := slices.Clone(a)
	for _, v := range b {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
