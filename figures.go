package fleet

import (
	"slices"
	"strings"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Figures are the aggregate figures of a Snapshot, for metrics and
// dashboards: the fleet's counts and each quota node's quota and usage,
// without a copy of any workload. Scheduler.Figures computes them from the
// live state at a fraction of a Snapshot's cost; Snapshot.Figures derives
// the same value from a Snapshot.
type Figures struct {
	// Time is the now of the latest call the scheduler saw.
	Time time.Time
	// Fleet is Snapshot.Fleet without Occupancy (left empty: rendering
	// the map costs as much as the rest together).
	Fleet FleetView
	// Queues is Snapshot.Queues: every cohort and queue, by name.
	Queues []QueueView
	// Nominated is Snapshot.Nominated: GPUs held for beneficiaries of
	// drains in progress and for the new places of movers.
	Nominated int
}

// Figures returns the scheduler's aggregate figures: what
// s.Snapshot().Figures() returns, computed without copying the
// workloads. The result is the caller's; it shares nothing with the
// scheduler. A host that feeds gauges every few minutes and keeps
// snapshots only to restart calls this instead of Snapshot.
func (s *Scheduler) Figures() Figures {
	out := Figures{Time: s.now, Fleet: s.fleetView()}
	t := s.tree
	// Workloads per quota node, counted as Snapshot counts them.
	counts := make([]struct{ pending, running int }, t.NumNodes())
	moving := 0
	for _, e := range s.work {
		r := e.rec
		switch {
		case r.State == gang.Pending:
			counts[e.queue].pending++
		case r.State.HoldsGPUs():
			counts[e.queue].running++
			if r.Drain != nil {
				moving += r.MoveTo.GPUs()
			}
		}
	}
	out.Nominated = s.books.ReservedGPUs() + moving
	for n := range quota.NodeID(t.NumNodes()) {
		out.Queues = append(out.Queues, s.queueView(n, counts[n].pending, counts[n].running))
	}
	slices.SortStableFunc(out.Queues, func(a, b QueueView) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// fleetView is the fleet's view without Occupancy, which only Snapshot
// renders.
func (s *Scheduler) fleetView() FleetView {
	f := s.fleet
	st := f.Stats(topology.Root, topology.AllGroups)
	v := FleetView{
		GPUs: st.GPUs, HealthyGPUs: st.HealthyGPUs, FreeGPUs: st.FreeGPUs, AllocatedGPUs: st.Allocated,
		Nodes: st.Nodes, HealthyNodes: st.HealthyNodes, FreeNodes: st.FreeNodes, StrandedGPUs: st.Stranded,
	}
	for n := range topology.NodeID(f.NumNodes()) {
		if h := f.Health(n); h != topology.Healthy {
			v.Unhealthy = append(v.Unhealthy, NodeHealth{Node: f.NodeName(n), Health: h})
		}
	}
	for l := topology.Level(1); l < topology.Level(f.Depth()); l++ {
		n, d := f.LargestFreeBlock(l, topology.AllGroups)
		v.LargestFreeBlock = append(v.LargestFreeBlock, LevelBlock{Level: f.LevelName(l), Domain: f.DomainName(d), Nodes: n})
	}
	v.Crossings = s.crossingViews()
	return v
}

// queueView is quota node n's view with its pending and running counts.
func (s *Scheduler) queueView(n quota.NodeID, pending, running int) QueueView {
	t := s.tree
	qv := QueueView{Name: t.Name(n), IsQueue: t.IsQueue(n), Weight: t.Weight(n),
		DominantShare: t.DominantShare(n).Value(), Pending: pending, Running: running}
	if p, ok := t.Parent(n); ok {
		qv.Parent = t.Name(p)
	}
	for fl := range quota.FlavorID(t.NumFlavors()) {
		if !t.Serves(n, fl) && t.InUse(n, fl) == 0 {
			continue
		}
		nom, use := t.Nominal(n, fl), t.InUse(n, fl)
		fv := FlavorView{Flavor: t.FlavorName(fl), Nominal: nom, InUse: use,
			Borrowed: t.Borrowed(n, fl), Lendable: max(0, nom-use)}
		for r := quota.ResourceID(1); int(r) <= t.NumResources(); r++ {
			if u := t.InUseOf(n, fl, r); t.ServesResource(n, fl, r) || u != 0 {
				fv.Resources = append(fv.Resources, ResourceView{Resource: t.ResourceName(r), Nominal: t.NominalOf(n, fl, r), InUse: u})
			}
		}
		qv.Flavors = append(qv.Flavors, fv)
	}
	return qv
}

// Figures returns the snapshot's aggregate figures: its Time, Fleet
// (without Occupancy), Queues and Nominated. The slices are shared with
// the snapshot, not copied.
func (s Snapshot) Figures() Figures {
	fv := s.Fleet
	fv.Occupancy = ""
	return Figures{Time: s.Time, Fleet: fv, Queues: s.Queues, Nominated: s.Nominated}
}
