package preempt

import (
	"math"
	"time"

	"github.com/fleetsched/fleet/placement"
)

// CostModel prices evicting one running workload, in GPU-seconds of work
// lost. Victims orders candidates and compares domains by it. Cost must be
// deterministic, cheap (it is asked once per candidate per search), must
// not keep r, and should return 0 or more.
type CostModel interface {
	Cost(r *Running, now time.Time) float64
}

// DefaultCost is the cost model used when Options.Cost is nil: the GPUs a
// workload holds times the seconds of work it would lose (since its last
// checkpoint, or since it started when it has none: gang.DrainContract.
// Unsaved), plus the same GPUs times a restart overhead. A workload
// already draining costs 0: its work is lost whatever we decide.
type DefaultCost struct {
	RestartOverhead time.Duration // the time a restart takes, charged on every GPU freed
}

// Cost implements CostModel.
func (c DefaultCost) Cost(r *Running, now time.Time) float64 {
	if r.Draining {
		return 0
	}
	g := float64(gpusOf(r.Nodes))
	lost := r.W.Drain.Unsaved(now, r.Started)
	// Unsaved saturates (work started some 292 years before now, a zero
	// Started among it); adding the overhead then must not wrap below 0.
	if c.RestartOverhead > 0 && lost > math.MaxInt64-c.RestartOverhead {
		return g * time.Duration(math.MaxInt64).Seconds()
	}
	return g * (lost + c.RestartOverhead).Seconds()
}

func gpusOf(nodes []placement.NodeGPUs) int {
	n := 0
	for _, x := range nodes {
		n += x.GPUs
	}
	return n
}
