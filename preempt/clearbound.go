package preempt

import (
	"time"

	"github.com/fleetsched/fleet/topology"
)

// ClearBound reads, in O(1), what emptying every node of domain d would
// take at least: the highest priority among the work that would have to
// go (ok false when some node cannot be freed whole by evicting indexed
// candidates), and a lower bound on the work lost at now, in GPU-seconds,
// by the candidates that are not draining (each GPU of theirs in d times
// its unsaved time plus overhead, as DefaultCost counts it). A caller
// that must free the whole domain can rank domains by these numbers and
// look at the nodes of the cheapest only.
//
// Room held by work the index does not hold (a nomination) counts as
// free here, so both figures are bounds, exact when the index holds all
// that is allocated in d.
func (x *Index) ClearBound(d topology.DomainID, now time.Time, overhead time.Duration) (prio int32, gpuSeconds float64, ok bool) {
	prio = x.maxClear[d]
	if prio == noPrice {
		return 0, 0, false
	}
	c := float64(x.runGPUs[d])*(float64(now.Unix())+overhead.Seconds()) - float64(x.runGPUFrom[d])
	return prio, max(0, c*(1-1e-9)), true
}
