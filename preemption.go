package fleet

import (
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/preempt"
)

// tryPreempt asks for a plan that makes e fit by draining victims not
// already taken this cycle, and accepts it.
func (s *Scheduler) tryPreempt(now time.Time, e *entry, taken map[string]bool, c *cycle, d *Decisions) bool {
	if s.cfg.Policy.NoPreemption {
		return false
	}
	req := preempt.Request{W: &e.w, Queue: e.queue, Flavor: e.flavor, Now: now,
		FairSharing: s.cfg.Policy.FairSharing, Submitted: e.submitted, Nominations: s.drains}
	plan, err := s.searcher.Victims(s.fleet, s.tree, req, c.candidates(s), taken)
	// A plan without victims means it fits already, which tryAdmit has
	// ruled out for a reason preempt does not see (a reservation).
	if err != nil || len(plan.Victims) == 0 || s.blockedByReservation(now, e, plan.Target) {
		return false
	}
	if !s.nominate(now, e, plan, d) {
		return false
	}
	for _, v := range plan.Victims {
		taken[v.ID] = true
	}
	return true
}

// cycle holds what one Schedule call computes at most once.
type cycle struct {
	running []preempt.Running
	built   bool
}

// candidates lists every running workload as a possible victim, in ID
// order, built once per cycle and only when a preemption is tried. The
// rules that decide who may really be evicted live in preempt; this only
// resolves the class-dependent fields.
func (c *cycle) candidates(s *Scheduler) []preempt.Running {
	if c.built {
		return c.running
	}
	c.built = true
	for _, e := range s.work {
		if !e.state.HoldsGPUs() {
			continue
		}
		c.running = append(c.running, preempt.Running{
			W: &e.w, Queue: e.queue, Flavor: e.flavor, Nodes: e.nodes, Started: e.started,
			Draining: e.state == gang.Draining,
			// The drain contract: work that does not checkpoint is never a
			// victim unless its priority class says so.
			Preemptible: e.w.Drain.Preemptible || e.class.EvictWithoutCheckpoint,
			MinRuntime:  e.class.MinRuntime,
			Grace:       e.grace(),
		})
	}
	slices.SortFunc(c.running, func(a, b preempt.Running) int { return compareStrings(a.W.ID, b.W.ID) })
	return c.running
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
