package fleet

import (
	"slices"
	"strings"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// maxReplicaRun bounds how many identical replicas one preemption search
// covers.
const maxReplicaRun = 256

// replicas returns the run of workloads at the head of pending that are
// replicas of its first one: same queue, priority, flavor, pools, submit
// time, expected runtime and drain contract, and one pod set of the same
// size with no topology constraint, so that placing them together is the
// same as placing them one by one and every rule sees them alike. An inference
// spike is such a run, and one victim search then serves all of it.
func replicas(pending []*entry) []*entry {
	e := pending[0]
	if !replicable(e) {
		return pending[:1]
	}
	n := 1
	for n < len(pending) && n < maxReplicaRun {
		x := pending[n]
		if !replicable(x) || x.queue != e.queue || x.priority != e.priority || x.flavor != e.flavor ||
			x.w.ExpectedRuntime != e.w.ExpectedRuntime || x.w.Drain.Preemptible != e.w.Drain.Preemptible ||
			!x.submitted.Equal(e.submitted) ||
			!slices.Equal(x.w.Pools, e.w.Pools) || x.w.PodSets[0].Count != e.w.PodSets[0].Count ||
			x.w.PodSets[0].GPUsPerPod != e.w.PodSets[0].GPUsPerPod {
			break
		}
		n++
	}
	return pending[:n]
}

func replicable(e *entry) bool {
	return len(e.w.PodSets) == 1 && e.w.Topology == (gang.TopologyRequest{}) && e.w.Spread == (gang.Spread{})
}

// tryPreempt asks for a plan that makes run[0] fit, together with the rest
// of run (its replicas) when one plan can serve them all, by draining
// victims not already taken this cycle, and accepts it. It falls back to
// run[0] alone.
func (s *Scheduler) tryPreempt(now time.Time, run []*entry, taken map[string]bool, failed map[failKey]int, d *Decisions) bool {
	if s.cfg.Policy.NoPreemption {
		return false
	}
	key, keyed := failureKey(run[0])
	if keyed {
		if pods, ok := failed[key]; ok && run[0].w.Pods() >= pods {
			return false // a no larger gang of its class found no plan this cycle
		}
	}
	if len(run) > 1 {
		if ok, _ := s.preemptFor(now, run, taken, d); ok {
			return true
		}
	}
	ok, found := s.preemptFor(now, run[:1], taken, d)
	if ok {
		return true
	}
	// Only a search that found no plan says anything of larger gangs of
	// the class: a plan refused for a reservation, or one that needs no
	// victim, does not.
	if keyed && !found {
		if pods, ok := failed[key]; !ok || run[0].w.Pods() < pods {
			failed[key] = run[0].w.Pods()
		}
	}
	return false
}

// failKey is a class of pending workloads for which a failed victim search
// is monotonic within a cycle: same queue, priority, flavor, pools,
// required level and pod size. Victims are chosen by the queue's rules and
// the priority, so the candidates are the same (or fewer, for a later
// submission); if n pods of this size found no plan, more pods cannot.
type failKey struct {
	queue    quota.NodeID
	priority int32
	flavor   quota.FlavorID
	required string
	pools    string
	gpus     int
}

func failureKey(e *entry) (failKey, bool) {
	if len(e.w.PodSets) != 1 || e.w.Topology.Segment.Size > 0 || e.w.Spread != (gang.Spread{}) {
		return failKey{}, false
	}
	return failKey{queue: e.queue, priority: e.priority, flavor: e.flavor, required: e.w.Topology.Required,
		pools: strings.Join(e.w.Pools, ","), gpus: e.w.PodSets[0].GPUsPerPod}, true
}

// preemptFor reports whether it accepted a plan, and whether the search
// found one at all.
func (s *Scheduler) preemptFor(now time.Time, run []*entry, taken map[string]bool, d *Decisions) (ok, found bool) {
	e := run[0]
	w := &e.w
	if len(run) > 1 {
		joint := e.w.Clone()
		joint.PodSets[0].Count *= len(run)
		w = &joint
	}
	req := preempt.Request{W: w, Queue: e.queue, Flavor: e.flavor, Now: now,
		FairSharing: s.cfg.Policy.FairSharing, Submitted: e.submitted, Claims: s.drains}
	view := preempt.View{Fleet: s.fleet, Tree: s.tree, Index: s.index, Scratch: s.scratch}
	plan, err := s.searcher.Victims(view, req, taken)
	if err != nil {
		return false, false
	}
	// A plan without victims fits once victims already draining are gone.
	// It is nominated when its target takes GPUs they hold and nobody
	// claims; one that fits on free GPUs alone waits instead (tryAdmit
	// refused it for their quota, or for a reservation).
	if len(plan.Victims) == 0 && !s.onHeldGPUs(plan.Target) || s.blockedByReservation(now, e, plan.Target) {
		return false, true
	}
	s.keepDeadlines(now, &plan)
	// Each replica takes its share of the target, in order; the first one
	// carries the victims, the others claim what they free beyond it.
	per := e.w.PodSets[0].Count
	for i, x := range run {
		part := preempt.Plan{Beneficiary: x.w.ID, Target: s.share(plan.Target, x.w.ID, i*per, per), ReadyBy: plan.ReadyBy}
		if i == 0 {
			part.Victims, part.LostGPUSeconds = plan.Victims, plan.LostGPUSeconds
		}
		if !s.nominate(now, x, part, d) {
			if i == 0 {
				return false, true
			}
			break // the rest stay pending for the next cycle
		}
	}
	for _, v := range plan.Victims {
		taken[v.ID] = true
	}
	return true, true
}

// keepDeadlines gives a victim already draining the deadline it was
// given when first drained (preempt only knows grace periods), and sets
// the plan's ReadyBy to the latest deadline it waits for: its victims',
// and, where they and free GPUs do not cover a target node, those of the
// workloads already draining there.
func (s *Scheduler) keepDeadlines(now time.Time, plan *preempt.Plan) {
	plan.Victims = slices.Clone(plan.Victims)
	plan.ReadyBy = now
	for i := range plan.Victims {
		v := &plan.Victims[i]
		if x := s.work[v.ID]; x.state == gang.Draining {
			v.Deadline = x.deadline
		}
		if v.Deadline.After(plan.ReadyBy) {
			plan.ReadyBy = v.Deadline
		}
	}
	for _, ng := range plan.Target.NodeGPUs() {
		own := 0
		for _, v := range plan.Victims {
			for _, x := range v.Nodes {
				if x.Node == ng.Node {
					own += x.GPUs
				}
			}
		}
		if ng.GPUs <= s.fleet.Free(ng.Node)+own {
			continue // free GPUs and its own victims' cover this node
		}
		for _, x := range s.draining { // a maximum: map order does not matter
			if x.onNode(ng.Node) && x.deadline.After(plan.ReadyBy) {
				plan.ReadyBy = x.deadline
			}
		}
	}
}

// onHeldGPUs reports whether a target needs more GPUs on some node than
// are free there now.
func (s *Scheduler) onHeldGPUs(a placement.Assignment) bool {
	for _, x := range a.NodeGPUs() {
		if x.GPUs > s.fleet.Free(x.Node) {
			return true
		}
	}
	return false
}

// share cuts pods [from, from+n) of a joint target into one replica's
// assignment.
func (s *Scheduler) share(t placement.Assignment, id string, from, n int) placement.Assignment {
	a := placement.Assignment{Workload: id, Group: t.Group, Domain: t.Domain, Level: t.Level,
		Pods: slices.Clone(t.Pods[from : from+n])}
	nodes := make([]topology.NodeID, n)
	for i := range a.Pods {
		a.Pods[i].Index = i
		nodes[i] = a.Pods[i].Node
	}
	a.Span = s.fleet.Span(nodes)
	return a
}

// The victim candidates are every running workload, kept in preempt's
// index as they start, drain and end. The rules that decide who may
// really be evicted live in preempt; a candidate only carries the
// class-dependent fields resolved.

func (s *Scheduler) candidate(e *entry) preempt.Running {
	return preempt.Running{
		W: &e.w, Queue: e.queue, Flavor: e.flavor, Nodes: e.nodes, Started: e.started,
		Draining: e.state == gang.Draining,
		// The drain contract: work that does not checkpoint is never a
		// victim unless its priority class says so.
		Preemptible: e.w.Drain.Preemptible || e.class.EvictWithoutCheckpoint,
		MinRuntime:  e.class.MinRuntime,
		Grace:       e.grace(),
	}
}

// startedRunning adds a newly running workload to the candidates.
func (s *Scheduler) startedRunning(e *entry) {
	if err := s.index.Add(s.candidate(e)); err != nil {
		panic("fleet: indexing a running workload: " + err.Error())
	}
}

// updateCandidate notes that e's candidate changed (it started draining).
func (s *Scheduler) updateCandidate(e *entry) {
	if err := s.index.Update(s.candidate(e)); err != nil {
		panic("fleet: updating a running workload: " + err.Error())
	}
}

// stoppedRunning removes e from the candidates.
func (s *Scheduler) stoppedRunning(e *entry) {
	if err := s.index.Remove(e.w.ID); err != nil {
		panic("fleet: unindexing a workload: " + err.Error())
	}
}
