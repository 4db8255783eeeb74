package metrics

import (
	"math"
	"sort"
)

// sketch is a weighted quantile sketch with DDSketch's logarithmic
// mapping: a value v > sketchMin falls in bin ceil(log_gamma(v)), and a
// quantile read back is within sketchAlpha (1%) of a value of that rank.
// Its size depends on the spread of the values (at most about 1,200 bins
// from a millisecond to a year), never on how many were added, so waits
// and drain times are kept without storing them. Bins are sparse and
// sorted; weights are counts for waits and seconds for time-weighted
// gauges such as stranded GPUs.
type sketch struct {
	bins  []sketchBin
	zero  float64 // weight of values at or under sketchMin
	total float64
}

type sketchBin struct {
	idx int32
	w   float64
}

const (
	sketchAlpha = 0.01
	sketchMin   = 1e-3
)

// sketchGamma is (1+alpha)/(1-alpha); its log is taken once per call of
// the two mapping functions below, which are not on a per-event path.
func sketchLnGamma() float64 { return math.Log((1 + sketchAlpha) / (1 - sketchAlpha)) }

func sketchIndex(v float64) int32 { return int32(math.Ceil(math.Log(v) / sketchLnGamma())) }

// sketchValue is the bin's representative: within alpha of every value in it.
func sketchValue(idx int32) float64 {
	g := (1 + sketchAlpha) / (1 - sketchAlpha)
	return 2 * math.Exp(float64(idx)*sketchLnGamma()) / (g + 1)
}

func (s *sketch) add(v, w float64) {
	if w <= 0 {
		return
	}
	s.total += w
	if !(v > sketchMin) {
		s.zero += w
		return
	}
	idx := sketchIndex(v)
	i := sort.Search(len(s.bins), func(i int) bool { return s.bins[i].idx >= idx })
	if i < len(s.bins) && s.bins[i].idx == idx {
		s.bins[i].w += w
		return
	}
	s.bins = append(s.bins, sketchBin{})
	copy(s.bins[i+1:], s.bins[i:])
	s.bins[i] = sketchBin{idx: idx, w: w}
}

// merge adds o's weights to s.
func (s *sketch) merge(o *sketch) {
	if o.total == 0 {
		return
	}
	s.total += o.total
	s.zero += o.zero
	if len(s.bins) == 0 {
		s.bins = append(s.bins, o.bins...)
		return
	}
	out := make([]sketchBin, 0, len(s.bins)+len(o.bins))
	i, j := 0, 0
	for i < len(s.bins) || j < len(o.bins) {
		switch {
		case j == len(o.bins) || (i < len(s.bins) && s.bins[i].idx < o.bins[j].idx):
			out = append(out, s.bins[i])
			i++
		case i == len(s.bins) || o.bins[j].idx < s.bins[i].idx:
			out = append(out, o.bins[j])
			j++
		default:
			out = append(out, sketchBin{idx: s.bins[i].idx, w: s.bins[i].w + o.bins[j].w})
			i++
			j++
		}
	}
	s.bins = out
}

// quantile returns the smallest value whose cumulative weight reaches
// q x total (the nearest-rank definition), or 0 for an empty sketch.
func (s *sketch) quantile(q float64) float64 {
	if s.total == 0 {
		return 0
	}
	rank := q * s.total
	cum := s.zero
	if cum >= rank && s.zero > 0 {
		return 0
	}
	for _, b := range s.bins {
		cum += b.w
		if cum >= rank*(1-1e-12) {
			return sketchValue(b.idx)
		}
	}
	return sketchValue(s.bins[len(s.bins)-1].idx)
}
