package fleet

import (
	"fmt"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// nomination holds capacity for a beneficiary while its victims drain.
//
// The accounting convention: the beneficiary's quota is charged when the
// plan is accepted, so no other queue borrows it meanwhile. Its target
// GPUs that are free at that moment are allocated on the fleet at once
// ("held"); the rest are still held by victims and pass to the nomination,
// without ever being free, as each victim exits. So on every node,
// free + allocated-to-running + held = capacity, and no GPU can be taken
// by anyone else while victims drain.
type nomination struct {
	beneficiary string
	target      placement.Assignment
	need        map[topology.NodeID]int // target GPUs still held by victims
	held        map[topology.NodeID]int // target GPUs held for the beneficiary
	victims     map[string]bool         // victims still running
	readyBy     time.Time
}

// absorb takes up to gpus of a victim's GPUs on node n for the target and
// returns how many it took.
func (n *nomination) absorb(node topology.NodeID, gpus int) int {
	t := min(gpus, n.need[node])
	if t > 0 {
		n.need[node] -= t
		n.held[node] += t
	}
	return t
}

func (n *nomination) victimGone(id string) { delete(n.victims, id) }

// ready reports whether every victim is gone and every target GPU held.
func (n *nomination) ready() bool {
	if len(n.victims) > 0 {
		return false
	}
	for _, v := range n.need {
		if v > 0 {
			return false
		}
	}
	return true
}

func (n *nomination) onNode(node topology.NodeID) bool { return n.held[node] > 0 || n.need[node] > 0 }

// heldGPUs is the number of GPUs held for the beneficiary now.
func (n *nomination) heldGPUs() int {
	t := 0
	for _, v := range n.held {
		t += v
	}
	return t
}

// nominate records an accepted plan: charges the beneficiary's quota,
// holds the target's free GPUs now and marks the victims as draining.
func (s *Scheduler) nominate(now time.Time, e *entry, target placement.Assignment, victims []*entry, reasons []string, lost []float64, d *Decisions) {
	n := &nomination{beneficiary: e.w.ID, target: target.Clone(), need: map[topology.NodeID]int{},
		held: map[topology.NodeID]int{}, victims: map[string]bool{}}
	for _, ng := range n.target.NodeGPUs() {
		free := s.fleet.Free(ng.Node)
		// GPUs of victims already draining for someone else are not free;
		// the plan only counts GPUs free now or held by its own victims.
		take := min(free, ng.GPUs)
		if take > 0 {
			if err := s.fleet.Allocate(ng.Node, take); err != nil {
				panic(fmt.Sprintf("fleet: holding free GPUs for %q: %v", e.w.ID, err))
			}
			n.held[ng.Node] = take
		}
		if ng.GPUs > take {
			n.need[ng.Node] = ng.GPUs - take
		}
	}
	if err := s.tree.AddUsage(e.queue, e.flavor, int64(e.gpus())); err != nil {
		panic(fmt.Sprintf("fleet: quota for nomination of %q: %v", e.w.ID, err))
	}
	for i, v := range victims {
		if v.state != gang.Draining {
			v.state = gang.Draining
			s.draining[v.w.ID] = v
			v.deadline = now.Add(v.grace())
			v.reason = reasons[i]
			d.Drain = append(d.Drain, Drain{ID: v.w.ID, Deadline: v.deadline, Reason: v.reason, Beneficiary: e.w.ID, LostGPUSeconds: lost[i]})
			ev := s.event(EventDrainStarted, now, v)
			ev.Reason, ev.Beneficiary, ev.Deadline, ev.LostGPUSeconds = v.reason, e.w.ID, v.deadline, lost[i]
			s.emit(ev)
		}
		v.beneficiary = e.w.ID
		n.victims[v.w.ID] = true
		if v.deadline.After(n.readyBy) {
			n.readyBy = v.deadline
		}
	}
	s.noms[e.w.ID] = n
}

// dissolve gives a nomination's held GPUs and quota back. Its victims go on
// draining (they were already told to stop); their GPUs will simply be
// freed when they exit.
func (s *Scheduler) dissolve(now time.Time, n *nomination, why string) {
	for _, node := range slices.Sorted(mapKeys(n.held)) {
		if g := n.held[node]; g > 0 {
			if err := s.fleet.Release(node, g); err != nil {
				panic(fmt.Sprintf("fleet: releasing nominated GPUs: %v", err))
			}
		}
	}
	if e, ok := s.work[n.beneficiary]; ok {
		if err := s.tree.RemoveUsage(e.queue, e.flavor, int64(e.gpus())); err != nil {
			panic(fmt.Sprintf("fleet: quota of a dissolved nomination: %v", err))
		}
		s.emit(Event{Kind: EventNominationDissolved, Time: now, Workload: e.w.ID, Queue: e.w.Queue, GPUs: n.heldGPUs(), Reason: why})
	} else {
		s.emit(Event{Kind: EventNominationDissolved, Time: now, Workload: n.beneficiary, GPUs: n.heldGPUs(), Reason: why})
	}
	for id := range n.victims {
		if v, ok := s.work[id]; ok && v.beneficiary == n.beneficiary {
			v.beneficiary = ""
		}
	}
	delete(s.noms, n.beneficiary)
}
