package fleet

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Scheduler is the host-facing loop: a deterministic state machine that
// owns the fleet's allocation state and the quota usage. It has no clock
// and no goroutines; every call takes the host's now. It is not safe for
// concurrent use.
type Scheduler struct {
	cfg     Config
	fleet   *topology.Fleet
	tree    *quota.Tree
	placer  *placement.Placer
	classes map[string]PriorityClass

	work       map[string]*entry // every workload not yet ended
	queued     map[string]*entry // pending ones, so a cycle never scans running work
	draining   map[string]*entry // draining victims, for kills
	seq        uint64
	now        time.Time
	events     []Event
	reserve    *reservation
	drains     *preempt.Drains
	searcher   *preempt.Searcher
	targets    map[string]placement.Assignment // nominated beneficiaries' targets
	index      *preempt.Index                  // running workloads, the victim candidates
	scratch    *topology.Fleet                 // a mirror of fleet for victim searches
	lastEvents int                             // events of the last cycle, to size the next
	pendingBuf []*entry                        // scratch of Schedule
}

// entry is the scheduler's record of one workload.
type entry struct {
	w         gang.Workload
	queue     quota.NodeID
	flavor    quota.FlavorID
	priority  int32
	class     PriorityClass
	state     gang.State
	submitted time.Time
	seq       uint64
	view      Pending // what a QueueOrder sees, refreshed each cycle

	// Admitted or draining.
	started   time.Time
	assign    placement.Assignment
	nodes     []placement.NodeGPUs // GPUs per node, from assign
	borrowing bool

	// Draining.
	deadline    time.Time
	reason      string
	beneficiary string
	killAsked   bool
}

func (e *entry) gpus() int { return e.w.GPUs() }

// New validates cfg whole and builds an empty scheduler.
func New(cfg Config) (*Scheduler, error) {
	f, err := topology.New(cfg.Topology)
	if err != nil {
		return nil, &Error{Op: "new", Detail: "topology", Err: fmt.Errorf("%w: %w", ErrInvalidConfig, err)}
	}
	t, err := quota.New(cfg.Quota)
	if err != nil {
		return nil, &Error{Op: "new", Detail: "quota", Err: fmt.Errorf("%w: %w", ErrInvalidConfig, err)}
	}
	classes := map[string]PriorityClass{}
	for _, c := range cfg.Classes {
		if c.Name == "" {
			return nil, refuse("new", "", ErrInvalidConfig, "a priority class has no name")
		}
		if _, dup := classes[c.Name]; dup {
			return nil, refuse("new", "", ErrInvalidConfig, "priority class %q defined twice", c.Name)
		}
		if c.Grace < 0 || c.MinRuntime < 0 {
			return nil, refuse("new", "", ErrInvalidConfig, "priority class %q has a negative duration", c.Name)
		}
		classes[c.Name] = c
	}
	if cfg.Policy.RestartOverhead < 0 {
		return nil, refuse("new", "", ErrInvalidConfig, "negative restart overhead")
	}
	return &Scheduler{
		cfg: cfg, fleet: f, tree: t, classes: classes,
		placer: placement.NewPlacer(placement.Options{Scorer: cfg.Policy.Scorer}),
		work:   map[string]*entry{}, queued: map[string]*entry{}, draining: map[string]*entry{},
		drains: preempt.NewDrains(), targets: map[string]placement.Assignment{},
		index: preempt.NewIndex(f, t), scratch: f.Clone(),
		searcher: preempt.NewSearcher(preempt.Options{RestartOverhead: cfg.Policy.RestartOverhead, Cost: cfg.Policy.Cost,
			Placement: placement.Options{Scorer: cfg.Policy.Scorer}}),
	}, nil
}

func (s *Scheduler) tick(op string, now time.Time) error {
	if now.Before(s.now) {
		return refuse(op, "", ErrTimeReversed, "now %s is before %s", now.Format(time.RFC3339), s.now.Format(time.RFC3339))
	}
	return nil
}

func (s *Scheduler) emit(e Event) {
	if s.events == nil {
		// The slice goes to the host with the cycle's Decisions; size the
		// next one like the last, so a busy cycle does not regrow it.
		s.events = make([]Event, 0, max(16, s.lastEvents))
	}
	s.events = append(s.events, e)
}

func (s *Scheduler) event(kind EventKind, now time.Time, e *entry) Event {
	return Event{Kind: kind, Time: now, Workload: e.w.ID, Queue: e.w.Queue, Shape: e.w.Shape,
		Class: e.class.Name, Priority: e.priority, Flavor: s.tree.FlavorName(e.flavor), GPUs: e.gpus()}
}

// resolve checks a workload against the scheduler's fleet, quota tree and
// classes and returns its entry, without changing anything.
func (s *Scheduler) resolve(op string, w gang.Workload) (*entry, error) {
	if err := w.ValidateFor(s.fleet.Levels(), s.fleet.MaxGPUsPerNode()); err != nil {
		return nil, &Error{Op: op, Workload: w.ID, Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
	}
	if _, dup := s.work[w.ID]; dup {
		return nil, refuse(op, w.ID, ErrDuplicate, "already known")
	}
	q, ok := s.tree.Node(w.Queue)
	if !ok || !s.tree.IsQueue(q) {
		return nil, refuse(op, w.ID, ErrUnknownQueue, "%q is not a queue of the quota tree", w.Queue)
	}
	e := &entry{w: w.Clone(), queue: q, priority: w.Priority}
	if w.PriorityClass != "" {
		c, ok := s.classes[w.PriorityClass]
		if !ok {
			return nil, refuse(op, w.ID, ErrUnknownClass, "%q", w.PriorityClass)
		}
		e.class, e.priority = c, c.Value
		// The lower packages read the priority from the spec (preempt's
		// rules and victim order): it carries the class's value.
		e.w.Priority = c.Value
	}
	// The flavor it is charged for: its own, or the first flavor its queue
	// serves that the fleet has.
	flavor := w.Flavor
	if flavor == "" {
		for f := range quota.FlavorID(s.tree.NumFlavors()) {
			if s.tree.Serves(q, f) && s.hasFlavor(s.tree.FlavorName(f)) {
				flavor = s.tree.FlavorName(f)
				break
			}
		}
	}
	f, ok := s.tree.Flavor(flavor)
	if !ok || !s.tree.Serves(q, f) {
		return nil, refuse(op, w.ID, ErrNeverFits, "queue %q serves no flavor %q", w.Queue, flavor)
	}
	e.flavor = f
	e.w.Flavor = flavor
	// A gang larger than every eligible node put together, or than all
	// the quota its queue could ever reach, can never run.
	if int64(w.GPUs()) > s.tree.Potential(q, f) {
		return nil, refuse(op, w.ID, ErrNeverFits, "needs %d GPUs, queue %q can reach at most %d", w.GPUs(), w.Queue, s.tree.Potential(q, f))
	}
	// The largest domain of the required level (the fleet when none is
	// required) in an eligible group bounds what the gang can ever get.
	level := topology.Level(0)
	if w.Topology.Required != "" {
		level, _ = s.fleet.Level(w.Topology.Required)
	}
	largest := 0
	lo, hi := s.fleet.DomainsAt(level)
	for g := range topology.GroupID(s.fleet.NumGroups()) {
		if s.fleet.GroupFlavor(g) != flavor || (len(w.Pools) > 0 && !slices.Contains(w.Pools, s.fleet.GroupPool(g))) {
			continue
		}
		for d := lo; d < hi; d++ {
			largest = max(largest, s.fleet.Stats(d, g).GPUs)
		}
	}
	if w.GPUs() > largest {
		return nil, refuse(op, w.ID, ErrNeverFits, "needs %d GPUs, the largest eligible %s has %d", w.GPUs(), s.fleet.LevelName(level), largest)
	}
	return e, nil
}

func (s *Scheduler) hasFlavor(flavor string) bool {
	for g := range topology.GroupID(s.fleet.NumGroups()) {
		if s.fleet.GroupFlavor(g) == flavor {
			return true
		}
	}
	return false
}

// Submit queues a workload. It is refused whole (typed error, state
// untouched) when invalid, a duplicate, for an unknown queue or class, or
// when it could never fit the fleet or its queue's reachable quota.
func (s *Scheduler) Submit(now time.Time, w gang.Workload) error {
	if err := s.tick("submit", now); err != nil {
		return err
	}
	e, err := s.resolve("submit", w)
	if err != nil {
		return err
	}
	s.now = now
	s.seq++
	e.state, e.submitted, e.seq = gang.Pending, now, s.seq
	s.work[w.ID] = e
	s.queued[w.ID] = e
	s.emit(s.event(EventSubmitted, now, e))
	return nil
}

// Cancel withdraws a pending workload, or stops tracking an admitted one
// the host has stopped (the host must stop it; this call releases its
// GPUs). A beneficiary's nomination dissolves.
func (s *Scheduler) Cancel(now time.Time, id string) error {
	if err := s.tick("cancel", now); err != nil {
		return err
	}
	e, ok := s.work[id]
	if !ok {
		return refuse("cancel", id, ErrUnknownID, "")
	}
	s.now = now
	s.finish(now, e, gang.ExitCancelled)
	s.emit(s.event(EventCancelled, now, e))
	return nil
}

// Exited records that a workload ended. Its GPUs return (or pass to the
// nomination they were drained for) and its quota usage is released.
func (s *Scheduler) Exited(now time.Time, id string, how gang.ExitReason) error {
	if err := s.tick("exited", now); err != nil {
		return err
	}
	e, ok := s.work[id]
	if !ok {
		return refuse("exited", id, ErrUnknownID, "")
	}
	if !e.state.HoldsGPUs() {
		return refuse("exited", id, ErrBadState, "workload is %s, not running", e.state)
	}
	if how < gang.ExitFinished || how > gang.ExitNodeLost {
		return refuse("exited", id, ErrInvalid, "unknown exit reason %d", how)
	}
	s.now = now
	ev := s.event(EventExited, now, e)
	ev.Exit, ev.Runtime, ev.Reason = how, now.Sub(e.started), e.reason
	s.finish(now, e, how)
	s.emit(ev)
	return nil
}

// Checkpointed records that a running workload saved its state at now,
// which lowers the cost of preempting it.
func (s *Scheduler) Checkpointed(now time.Time, id string) error {
	if err := s.tick("checkpointed", now); err != nil {
		return err
	}
	e, ok := s.work[id]
	if !ok {
		return refuse("checkpointed", id, ErrUnknownID, "")
	}
	if !e.state.HoldsGPUs() {
		return refuse("checkpointed", id, ErrBadState, "workload is %s, not running", e.state)
	}
	s.now = now
	e.w.Drain.LastCheckpoint = now
	s.updateCandidate(e)
	s.emit(s.event(EventCheckpointed, now, e))
	return nil
}

// finish removes a workload: releases what it holds and dissolves what it
// was promised.
func (s *Scheduler) finish(now time.Time, e *entry, how gang.ExitReason) {
	if e.state.HoldsGPUs() {
		s.releaseRunning(e)
		s.stoppedRunning(e)
	}
	if _, ok := s.targets[e.w.ID]; ok {
		s.dissolve(now, e.w.ID, "beneficiary "+how.String())
	}
	delete(s.work, e.w.ID)
	delete(s.queued, e.w.ID)
	delete(s.draining, e.w.ID)
	e.state = how.State()
}

// SetNodeHealth records a node failure, cordon or repair. When a node goes
// down, every workload with a pod on it has failed as a whole: the
// scheduler releases them and returns their IDs (sorted); the host must
// stop what is left of them. A beneficiary whose nominated GPUs were on the
// node loses its nomination and queues again.
func (s *Scheduler) SetNodeHealth(now time.Time, node string, h topology.Health) ([]string, error) {
	if err := s.tick("node-health", now); err != nil {
		return nil, err
	}
	n, ok := s.fleet.Node(node)
	if !ok {
		return nil, refuse("node-health", "", ErrUnknownNode, "%q", node)
	}
	if h > topology.Down {
		return nil, refuse("node-health", "", ErrInvalid, "unknown health %d", h)
	}
	s.now = now
	var affected []string
	if h == topology.Down {
		for id, e := range s.work {
			if e.state.HoldsGPUs() && e.onNode(n) {
				affected = append(affected, id)
			}
		}
		slices.Sort(affected)
		for _, id := range affected {
			e := s.work[id]
			ev := s.event(EventExited, now, e)
			ev.Exit, ev.Runtime, ev.Node = gang.ExitNodeLost, now.Sub(e.started), node
			s.finish(now, e, gang.ExitNodeLost)
			s.emit(ev)
		}
	}
	if h != topology.Healthy {
		// A beneficiary must not start on a node that takes no new work:
		// its nomination dissolves and it queues again.
		for _, b := range slices.Sorted(maps.Keys(s.targets)) {
			if targetOnNode(s.targets[b], n) {
				s.dissolve(now, b, "nominated node "+node+" "+h.String())
			}
		}
	}
	if err := s.fleet.SetHealth(n, h); err != nil {
		panic(fmt.Sprintf("fleet: health of a known node refused: %v", err))
	}
	s.mirror(s.scratch.SetHealth(n, h))
	kind := EventNodeUp
	if h != topology.Healthy {
		kind = EventNodeDown
	}
	s.emit(Event{Kind: kind, Time: now, Node: node, Affected: slices.Clone(affected), Reason: h.String()})
	return affected, nil
}

func (e *entry) onNode(n topology.NodeID) bool {
	for _, p := range e.assign.Pods {
		if p.Node == n {
			return true
		}
	}
	return false
}

// Adopt records a workload the host already runs, on the given nodes: at
// start-up, or after a host restart, the scheduler rebuilds its state from
// what really runs. The assignment maps every pod, in pod set order, to a
// node name. It is refused whole if the workload is invalid or a
// duplicate, or the nodes cannot hold it.
func (s *Scheduler) Adopt(now time.Time, w gang.Workload, started time.Time, pods []PodAssignment) error {
	if err := s.tick("adopt", now); err != nil {
		return err
	}
	e, err := s.resolve("adopt", w)
	if err != nil {
		return err
	}
	a := placement.Assignment{Workload: w.ID}
	byName := map[string]int{}
	for i, ps := range w.PodSets {
		byName[ps.Name] = i
	}
	seen := map[[2]int]bool{} // pod set and index: each pod once
	for _, p := range pods {
		n, ok := s.fleet.Node(p.Node)
		if !ok {
			return refuse("adopt", w.ID, ErrUnknownNode, "%q", p.Node)
		}
		// The node must be one the workload may use: quota is charged for
		// its flavor.
		if g := s.fleet.NodeGroup(n); s.fleet.GroupFlavor(g) != e.w.Flavor || len(w.Pools) > 0 && !slices.Contains(w.Pools, s.fleet.GroupPool(g)) {
			return refuse("adopt", w.ID, ErrInvalid, "node %q is not of flavor %q or of its pools", p.Node, e.w.Flavor)
		}
		ps, ok := byName[p.PodSet]
		if !ok || p.GPUs != w.PodSets[ps].GPUsPerPod || p.Index < 0 || p.Index >= w.PodSets[ps].Count ||
			seen[[2]int{ps, p.Index}] {
			return refuse("adopt", w.ID, ErrInvalid, "pod %s[%d] does not match the spec", p.PodSet, p.Index)
		}
		seen[[2]int{ps, p.Index}] = true
		a.Pods = append(a.Pods, placement.Pod{PodSet: ps, Index: p.Index, Node: n, GPUs: p.GPUs})
	}
	if len(a.Pods) != w.Pods() {
		return refuse("adopt", w.ID, ErrInvalid, "%d pods given, the spec has %d", len(a.Pods), w.Pods())
	}
	if err := placement.Apply(s.fleet, a); err != nil {
		return &Error{Op: "adopt", Workload: w.ID, Err: err}
	}
	s.mirror(placement.Apply(s.scratch, a))
	s.now = now
	s.seq++
	e.seq, e.submitted, e.started = s.seq, started, started
	a.Span = s.fleet.Span(podNodes(a))
	a.Group = s.fleet.NodeGroup(a.Pods[0].Node)
	s.admitEntry(e, a)
	return nil
}

func podNodes(a placement.Assignment) []topology.NodeID {
	out := make([]topology.NodeID, len(a.Pods))
	for i, p := range a.Pods {
		out[i] = p.Node
	}
	return out
}

// admitEntry records an admission: quota usage and the entry's state. The
// GPUs are already allocated on the fleet.
func (s *Scheduler) admitEntry(e *entry, a placement.Assignment) {
	e.borrowing = s.tree.Fits(e.queue, e.flavor, int64(e.gpus())).Borrowing()
	if err := s.tree.AddUsage(e.queue, e.flavor, int64(e.gpus())); err != nil {
		panic(fmt.Sprintf("fleet: quota usage refused for %q: %v", e.w.ID, err))
	}
	e.assign, e.nodes, e.state = a, a.NodeGPUs(), gang.Admitted
	s.work[e.w.ID] = e
	delete(s.queued, e.w.ID)
	s.startedRunning(e)
}

func (s *Scheduler) sortedIDs() []string { return slices.Sorted(maps.Keys(s.work)) }

// grace is the drain deadline length of a victim.
func (e *entry) grace() time.Duration {
	switch {
	case e.w.Drain.GracePeriod > 0:
		return e.w.Drain.GracePeriod
	case e.class.Grace > 0:
		return e.class.Grace
	}
	return DefaultGrace
}

// order is the admission order of pending work, in one place: higher
// priority first; with fair sharing, the queue with the lower dominant
// share; then earlier submission; then ID. A host's Policy.Order replaces
// the first two criteria; submission order and ID still break its ties.
func (s *Scheduler) order(pending []*entry) {
	fair, custom := s.cfg.Policy.FairSharing, s.cfg.Policy.Order
	if fair || custom != nil {
		share := map[quota.NodeID]float64{}
		for _, e := range pending {
			sh, ok := share[e.queue]
			if !ok && fair {
				sh = s.tree.DominantShare(e.queue).Value()
				share[e.queue] = sh
			}
			e.view = Pending{W: &e.w, Priority: e.priority, Submitted: e.submitted, DominantShare: sh}
		}
	}
	slices.SortFunc(pending, func(a, b *entry) int {
		if custom != nil {
			if c := custom.Compare(&a.view, &b.view); c != 0 {
				return c
			}
		} else {
			if c := cmp.Compare(b.priority, a.priority); c != 0 {
				return c
			}
			if c := cmp.Compare(a.view.DominantShare, b.view.DominantShare); fair && c != 0 {
				return c
			}
		}
		if c := cmp.Compare(a.seq, b.seq); c != 0 {
			return c
		}
		return cmp.Compare(a.w.ID, b.w.ID)
	})
}

// mirror checks a change applied to the scratch fleet after the same
// change succeeded on the live one.
func (s *Scheduler) mirror(err error) {
	if err != nil {
		panic(fmt.Sprintf("fleet: scratch fleet out of step: %v", err))
	}
}
