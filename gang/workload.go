package gang

import (
	"slices"
	"time"
)

// MaxGPUs bounds the GPUs of one workload (and so its pods). It keeps the
// arithmetic of counts far from overflow on every platform and is far above
// any real fleet; Validate refuses workloads beyond it.
const MaxGPUs = 1 << 20

// Workload is one unit that is admitted whole or not at all: a gang of
// pod sets with where and how close together they must run, and how they
// may be stopped. It is plain data with JSON tags; the scheduler copies it
// on submission (see [Workload.Clone]) and records the submit time itself.
type Workload struct {
	// ID is unique among the scheduler's workloads; non-empty.
	ID string `json:"id"`
	// Queue is the leaf queue of the quota tree it is charged to.
	Queue string `json:"queue"`
	// Priority orders workloads; higher wins. When PriorityClass is set,
	// the scheduler replaces it with the class's value: the class wins.
	Priority int32 `json:"priority"`
	// PriorityClass names the class whose priority and defaults apply
	// (such as the drain grace period). The scheduler owns the classes;
	// "" keeps Priority as given.
	PriorityClass string `json:"priorityClass,omitempty"`
	// Shape is inference, training or batch.
	Shape Shape `json:"shape,omitempty"`
	// PodSets lists the pods, in a fixed order: placement and segments
	// number pods by pod set, then by index within it.
	PodSets []PodSet `json:"podSets"`
	// Topology says how close together the pods must run.
	Topology TopologyRequest `json:"topology,omitzero"`
	// Flavor is the GPU model the workload needs ("H100"); "" means any.
	// Flavors, when set, supersedes it.
	Flavor string `json:"flavor,omitempty"`
	// Flavors is the set of GPU models the workload accepts; empty means
	// Flavor alone (or any model when that is empty too). Placement picks
	// the best fit across every accepted model, unless FlavorsInOrder.
	Flavors []string `json:"flavors,omitempty"`
	// FlavorsInOrder makes Flavors a preference order: a later model is
	// used only when no earlier one fits.
	FlavorsInOrder bool `json:"flavorsInOrder,omitempty"`
	// Pools lists the node pools it may run in, most preferred first;
	// empty means any pool.
	Pools []string `json:"pools,omitempty"`
	// Drain is how the workload may be stopped to make room.
	Drain DrainContract `json:"drain,omitzero"`
	// ExpectedRuntime is the host's estimate of the run's length, used for
	// bookings of future capacity; 0 means unknown.
	ExpectedRuntime time.Duration `json:"expectedRuntime,omitempty"`
	// Spread caps the pods per node or per domain, for high availability.
	Spread Spread `json:"spread,omitzero"`
	// Model names the model whose weights the pods load (an inference
	// replica's served model). Placement prefers the nodes where the host
	// reports those weights already present, and a victim search frees
	// such nodes first (see placement.Warm); "" means no preference.
	Model string `json:"model,omitempty"`
	// Booking names the approved booking (capacity calendar) whose blocks
	// the workload runs in: it starts there from the booking's start, and
	// nothing preempts it in its window. Empty: ordinary work.
	Booking string `json:"booking,omitempty"`
}

// GPUs returns the workload's total GPUs over all pod sets. It does not
// allocate.
func (w *Workload) GPUs() int {
	n := 0
	for i := range w.PodSets {
		n += w.PodSets[i].GPUs()
	}
	return n
}

// MilliGPUs returns the workload's GPUs in thousandths over all pod sets:
// whole GPUs and shares (MIG slices are known once placed). It does not
// allocate.
func (w *Workload) MilliGPUs() int64 {
	var n int64
	for i := range w.PodSets {
		n += int64(w.PodSets[i].Count) * w.PodSets[i].MilliGPUsPerPod()
	}
	return n
}

// Shared reports whether any pod set shares GPUs or asks for none, so that
// placement must work GPU by GPU rather than count whole GPUs.
func (w *Workload) Shared() bool {
	for i := range w.PodSets {
		if p := &w.PodSets[i]; p.Shared() || p.NoGPU() || len(p.Resources) > 0 {
			return true
		}
	}
	return false
}

// Accepts reports whether the workload may run on GPU model flavor, and
// its rank among the accepted models (0 is the first, and every model
// ranks 0 when the workload names none). It does not allocate.
func (w *Workload) Accepts(flavor string) (rank int, ok bool) {
	switch {
	case len(w.Flavors) > 0:
		for i, f := range w.Flavors {
			if f == flavor {
				return i, true
			}
		}
		return 0, false
	case w.Flavor != "":
		return 0, w.Flavor == flavor
	}
	return 0, true
}

// Pods returns the workload's number of pods over all pod sets. It does
// not allocate.
func (w *Workload) Pods() int {
	n := 0
	for i := range w.PodSets {
		n += w.PodSets[i].Count
	}
	return n
}

// WholeNode reports whether every pod takes a whole node of gpusPerNode
// GPUs, which lets placement count free nodes instead of free GPUs. It is
// false for a workload without pods and for gpusPerNode < 1. It does not
// allocate.
func (w *Workload) WholeNode(gpusPerNode int) bool {
	if gpusPerNode < 1 || len(w.PodSets) == 0 {
		return false
	}
	for i := range w.PodSets {
		if w.PodSets[i].GPUsPerPod != gpusPerNode {
			return false
		}
	}
	return true
}

// SegmentedPodSet returns the index of the pod set that Topology.Segment
// splits, or -1 when there are no segments or the named pod set does not
// exist (which Validate refuses). It does not allocate.
func (w *Workload) SegmentedPodSet() int {
	s := w.Topology.Segment
	if !s.Enabled() {
		return -1
	}
	if s.PodSet == "" {
		if len(w.PodSets) == 1 {
			return 0
		}
		return -1
	}
	for i := range w.PodSets {
		if w.PodSets[i].Name == s.PodSet {
			return i
		}
	}
	return -1
}

// Clone returns a deep copy: changing the copy's slices leaves w untouched.
// Nil and empty slices keep their nil-ness.
func (w *Workload) Clone() Workload {
	c := *w
	c.PodSets = slices.Clone(w.PodSets)
	c.Pools = slices.Clone(w.Pools)
	c.Flavors = slices.Clone(w.Flavors)
	for i := range c.PodSets {
		c.PodSets[i].Resources = slices.Clone(c.PodSets[i].Resources)
		c.PodSets[i].RankGroups = slices.Clone(c.PodSets[i].RankGroups)
	}
	return c
}
