package fleet

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Explanation says why a workload is where it is, as data with a rendered
// sentence, so a host can show it or act on it.
type Explanation struct {
	ID    string
	State gang.State
	// Quota is the quota verdict for the workload now (pending only).
	Quota *quota.Verdict
	// Placement is the topology's answer when it does not fit physically.
	Placement *placement.NoFit
	// VictimsLeft and ReadyBy describe a drain in progress for it.
	VictimsLeft int
	ReadyBy     time.Time
	// BehindReservation names the gang whose reserved domain it may not use.
	BehindReservation string
	// Draining victim: its deadline and beneficiary.
	Deadline    time.Time
	Beneficiary string
	Message     string
}

func (x Explanation) String() string { return x.Message }

// Explain says why workload id is pending (which quota limit bites and by
// how much, which topology level failed and the largest free block, the
// drain in progress for it, the reservation it is behind), or what it is
// doing if it runs. It does not change the scheduler.
func (s *Scheduler) Explain(id string) (Explanation, error) {
	e, ok := s.work[id]
	if !ok {
		return Explanation{}, refuse("explain", id, ErrUnknownID, "")
	}
	x := Explanation{ID: id, State: e.state}
	var msg []string
	switch e.state {
	case gang.Admitted:
		msg = append(msg, fmt.Sprintf("running since %s on %s", e.started.Format(time.TimeOnly), e.assign.Format(s.fleet)))
		if e.borrowing {
			msg = append(msg, "borrowing quota, so reclaimable by preemption")
		}
	case gang.Draining:
		x.Deadline, x.Beneficiary = e.deadline, e.beneficiary
		msg = append(msg, fmt.Sprintf("draining (%s) by %s", e.reason, e.deadline.Format(time.TimeOnly)))
		if e.beneficiary != "" {
			msg = append(msg, "for "+e.beneficiary)
		}
	case gang.Pending:
		if _, ok := s.targets[id]; ok {
			x.VictimsLeft, x.ReadyBy = s.drains.Pending(id)
			msg = append(msg, fmt.Sprintf("waiting for %d victims to drain, capacity back by %s", x.VictimsLeft, x.ReadyBy.Format(time.TimeOnly)))
			break
		}
		v := s.tree.Fits(e.queue, e.flavor, int64(e.gpus()))
		x.Quota = &v
		if !v.Fits() {
			msg = append(msg, "quota: "+v.String())
		}
		p := placement.NewPlacer(placement.Options{Explain: true, Scorer: s.cfg.Policy.Scorer})
		a, err := p.Place(s.fleet, &e.w)
		var nf *placement.NoFit
		switch {
		case errors.As(err, &nf):
			x.Placement = nf
			msg = append(msg, "topology: "+nf.Error())
		case err == nil && s.reserve != nil && s.blockedByReservation(s.now, e, a):
			x.BehindReservation = s.reserve.id
			msg = append(msg, fmt.Sprintf("behind a reservation of %s for gang %s", s.fleet.DomainName(s.reserve.domain), s.reserve.id))
		case err == nil && v.Fits():
			msg = append(msg, "fits now: admitted at the next cycle")
		}
	}
	x.Message = id + ": " + strings.Join(msg, "; ")
	return x, nil
}

// Snapshot returns a deep, read-only view of the scheduler's state.
func (s *Scheduler) Snapshot() Snapshot {
	f := s.fleet
	st := f.Stats(topology.Root, topology.AllGroups)
	snap := Snapshot{Time: s.now, Fleet: FleetView{
		GPUs: st.GPUs, HealthyGPUs: st.HealthyGPUs, FreeGPUs: st.FreeGPUs, AllocatedGPUs: st.Allocated,
		Nodes: st.Nodes, HealthyNodes: st.HealthyNodes, FreeNodes: st.FreeNodes, StrandedGPUs: st.Stranded,
		Occupancy: f.String(),
	}}
	for l := topology.Level(1); l < topology.Level(f.Depth()); l++ {
		n, d := f.LargestFreeBlock(l, topology.AllGroups)
		snap.Fleet.LargestFreeBlock = append(snap.Fleet.LargestFreeBlock, LevelBlock{Level: f.LevelName(l), Domain: f.DomainName(d), Nodes: n})
	}
	pendingBy, runningBy := map[quota.NodeID]int{}, map[quota.NodeID]int{}
	for _, id := range s.sortedIDs() {
		e := s.work[id]
		switch {
		case e.state == gang.Pending:
			pendingBy[e.queue]++
			_, nom := s.targets[id]
			snap.Pending = append(snap.Pending, PendingView{ID: id, Queue: e.w.Queue, Shape: e.w.Shape, Priority: e.priority,
				GPUs: e.gpus(), Submitted: e.submitted, Nominated: nom})
		case e.state.HoldsGPUs():
			runningBy[e.queue]++
			r := RunningView{ID: id, Queue: e.w.Queue, Shape: e.w.Shape, Class: e.class.Name, Priority: e.priority,
				Flavor: e.w.Flavor, GPUs: e.gpus(), Started: e.started, Draining: e.state == gang.Draining,
				Span: f.LevelName(e.assign.Span), Borrowing: e.borrowing}
			if r.Draining {
				r.Deadline = e.deadline
			}
			for _, ng := range e.assign.NodeGPUs() {
				r.Nodes = append(r.Nodes, NodeGPUs{Node: f.NodeName(ng.Node), GPUs: ng.GPUs})
			}
			snap.Running = append(snap.Running, r)
		}
	}
	snap.Nominated = s.nominatedGPUs()
	t := s.tree
	for n := range quota.NodeID(t.NumNodes()) {
		qv := QueueView{Name: t.Name(n), IsQueue: t.IsQueue(n), Weight: t.Weight(n),
			DominantShare: t.DominantShare(n).Value(), Pending: pendingBy[n], Running: runningBy[n]}
		if p, ok := t.Parent(n); ok {
			qv.Parent = t.Name(p)
		}
		for fl := range quota.FlavorID(t.NumFlavors()) {
			if !t.Serves(n, fl) && t.InUse(n, fl) == 0 {
				continue
			}
			nom, use := t.Nominal(n, fl), t.InUse(n, fl)
			qv.Flavors = append(qv.Flavors, FlavorView{Flavor: t.FlavorName(fl), Nominal: nom, InUse: use,
				Borrowed: t.Borrowed(n, fl), Lendable: max(0, nom-use)})
		}
		snap.Queues = append(snap.Queues, qv)
	}
	slices.SortStableFunc(snap.Queues, func(a, b QueueView) int { return strings.Compare(a.Name, b.Name) })
	return snap
}
