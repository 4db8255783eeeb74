package fleet

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/btree"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Scheduler is the host-facing loop: a deterministic state machine that
// orders pending work and applies policy. Who holds which GPU and which
// quota, nominations and drains live in one ledger it drives; the
// Scheduler keeps no copy of those facts. It has no clock and no
// goroutines; every call takes the host's now. It is not safe for
// concurrent use.
type Scheduler struct {
	cfg   Config
	fleet *topology.Fleet // read-only here: the ledger writes it
	tree  *quota.Tree     // read-only here: the ledger writes it
	books *ledger.Ledger
	cal   *calendar.Calendar // approved bookings of future blocks
	held  holds              // what the calendar holds in this cycle
	// sched is the quota schedule followed (nil: none); nextQuota its next
	// boundary.
	sched     *quota.Schedule
	nextQuota time.Time
	// defragSpent is the work automatic moves cost over the last hour.
	defragSpent []defragCost
	defrag      defragScratch
	// overflowing marks the queues the last cycle listed in Overflow.
	overflowing map[quota.NodeID]bool
	placer      *placement.Placer
	// explainer places again a workload that did not fit, to record the
	// largest block per level for Explain (failures only).
	explainer *placement.Placer
	classes   map[string]PriorityClass

	work   map[string]*entry // every workload not yet ended
	queued map[string]*entry // pending ones, so a cycle never scans running work
	// ordered holds the pending ones too, in queueLess order (enqueue,
	// dequeue keep both).
	ordered *btree.BTreeG[*entry]
	seq     uint64
	now     time.Time
	cycles  uint64 // Schedule calls so far
	// calls counts the host's calls that may change what a cycle decides
	// (tick), and quiet what NextChange knows of the last cycle.
	calls   uint64
	quiet   quietCycle
	events  []Event
	reserve *reservation
	// lastReserve is the reservation the last cycle ended with, carried
	// into the next (carryReservation).
	lastReserve *reservation
	// refused remembers, for one cycle, the plans found but refused
	// (preemption.go): an identical request would find them again.
	refused map[failKey]refusal
	// failed remembers, for one cycle, the victim searches that found no
	// plan (preemption.go).
	failed failMemo
	// failClasses numbers the failClasses met so far (failKey.class).
	failClasses map[failClass]int32
	// displaced lists, within a cycle, the workloads reclaimed for
	// without a nomination whose victims a later plan was promised: they
	// search again before the cycle ends.
	displaced []*entry
	// avoidSets interns, per cycle, the lists of domains searches were
	// kept out of (failKey.avoid is an index into it, plus one).
	avoidSets [][]topology.DomainID
	searcher  *preempt.Searcher
	// exclude is preemptFor's set of victims a search must count as gone.
	exclude    map[string]bool
	lastEvents int    // events of the last cycle, to size the next
	emitted    uint64 // events emitted so far, kept or not
	dropped    int    // events not kept since the last cycle (MaxEvents)
	noEvents   bool   // KeepEvents(false): no event is kept
	// adoptedDrains: Adopt restored a drain since the last cycle, which
	// may name beneficiaries the host never adopts (see Adoption).
	adoptedDrains bool
	pendingBuf    []*entry         // scratch of Schedule
	quotaRefusals quotaRefusals    // fitsQuota's refusals at the tree's and books' counts
	specs         specBufs         // scratch specs of elasticSize and minimumSpec
	outlooks      outlooks         // reserveFor's view of the held domains
	shrunk        []*ledger.Record // grow's buffer
	idle          idleBook         // usage the host reported, for Policy.IdleReclaim
	warm          *warmBook

	// unreclaimable remembers, for one cycle, the requests with shares,
	// slices or resources a reclaim search found no victims for
	// (reclaim_shared.go): an identical request would find none either.
	unreclaimable map[string]bool
	// nodeMax is the most of each resource one node has, per group.
	nodeMax nodeMax

	// configQuota is cfg.Quota as the tree reads it, before any live edit:
	// a Snapshot carries it so that Restore can tell a changed Config.
	configQuota *quota.Tree
}

// entry is the scheduler's record of one workload: the spec and the
// policy facts resolved from it. Its state, GPUs and drain are in rec.
type entry struct {
	w         gang.Workload
	rec       *ledger.Record
	queue     quota.NodeID
	flavor    quota.FlavorID
	priority  int32
	class     PriorityClass
	submitted time.Time
	seq       uint64
	view      Pending // what a QueueOrder sees, refreshed each cycle
	wait      waitVerdict
	// split is set on a pod a shrink split off an elastic workload.
	split *splitPod
	// reclaiming: victims drained for it without a nomination may still
	// be draining (reclaim_shared.go); its next search counts them first.
	// reclaimAt is the books' Unpromised count it was last read at.
	reclaiming bool
	reclaimAt  uint64
	// failClass is its failKey class, as found by failureKey (0: not
	// yet), before and once it is starved (Policy.WaitLimit).
	failClass [2]int32
	// unfit is tryAdmit's last verdict that it does not fit.
	unfit unfit
	// noPlan is tryPreempt's last answer that no plan makes room for it.
	noPlan noPlanMemo
}

func (e *entry) state() gang.State { return e.rec.State }

// gpus is what it is charged for: its running (or nominated) size.
func (e *entry) gpus() int {
	if e.rec != nil {
		return e.rec.GPUs()
	}
	return e.w.GPUs()
}

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
	if err := checkFlavors(f, t); err != nil {
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
		if c.Grace > MaxGrace {
			return nil, refuse("new", "", ErrInvalidConfig, "priority class %q: grace %s beyond MaxGrace %s", c.Name, c.Grace, MaxGrace)
		}
		classes[c.Name] = c
	}
	p := &cfg.Policy
	for _, x := range []struct {
		name     string
		negative bool
	}{{"RestartOverhead", p.RestartOverhead < 0}, {"HotSwapWait", p.HotSwapWait < 0},
		{"OverflowAfter", p.OverflowAfter < 0}, {"DefragBudget", p.DefragBudget < 0}, {"WaitLimit", p.WaitLimit < 0}} {
		if x.negative {
			return nil, refuse("new", "", ErrInvalidConfig, "Policy.%s is negative: 0 takes its default, or turns it off", x.name)
		}
	}
	if err := checkIdleRules(cfg.Policy.IdleReclaim, classes); err != nil {
		return nil, err
	}
	cal, err := calendar.New(time.Time{}, calendar.Config{Fleet: f, Quota: t})
	if err != nil {
		return nil, &Error{Op: "new", Detail: "calendar", Err: fmt.Errorf("%w: %w", ErrInvalidConfig, err)}
	}
	warm, books := newWarmBook(), ledger.New(f, t)
	books.SetAssignOptions(quota.AssignOptions{FairSharing: cfg.Policy.FairSharing})
	// Gangs that span leaves spread over the leaves' uplinks: the ledger
	// counts the gangs crossing each leaf.
	uplinks := books.Crossings()
	configQuota, err := quota.New(cfg.Quota)
	if err != nil {
		panic("fleet: a quota spec accepted once is refused: " + err.Error())
	}
	return &Scheduler{
		cfg: cfg, configQuota: configQuota, fleet: f, tree: t, classes: classes, books: books, cal: cal, warm: warm, nodeMax: newNodeMax(f),
		held: holds{waiting: map[string]bool{}}, overflowing: map[quota.NodeID]bool{},
		placer:    placement.NewPlacer(placement.Options{Scorer: cfg.Policy.Scorer, Warm: warm, Uplinks: uplinks, Terse: true}),
		explainer: placement.NewPlacer(placement.Options{Scorer: cfg.Policy.Scorer, Explain: true, Warm: warm, Uplinks: uplinks}),
		work:      map[string]*entry{}, queued: map[string]*entry{}, ordered: btree.NewG(16, queueLess),
		searcher: preempt.NewSearcher(preempt.Options{RestartOverhead: cfg.Policy.RestartOverhead, Cost: cfg.Policy.Cost,
			FairSharingStrategies: cfg.Policy.FairSharingStrategies,
			Placement:             placement.Options{Scorer: cfg.Policy.Scorer, Warm: warm, Uplinks: uplinks}}),
	}, nil
}

// checkFlavors refuses a quota tree whose guarantees exceed the fleet's
// GPUs of some flavor, and a quota flavor that the fleet spells otherwise
// (h100 against H100): such a queue could never run anything.
func checkFlavors(f *topology.Fleet, t *quota.Tree) error {
	capacity := map[string]int64{}
	for n := range topology.NodeID(f.NumNodes()) {
		if f.Health(n) != topology.Absent { // declared, not in service
			capacity[f.GroupFlavor(f.NodeGroup(n))] += int64(f.Capacity(n))
		}
	}
	for fl := range quota.FlavorID(t.NumFlavors()) {
		name := t.FlavorName(fl)
		if _, ok := capacity[name]; ok {
			continue
		}
		for have := range capacity {
			if strings.EqualFold(have, name) {
				return fmt.Errorf("quota flavor %q is spelled %q in the topology", name, have)
			}
		}
	}
	return t.ValidateCapacity(capacity)
}

// tick checks a call's now: an instant RFC 3339 holds, and time never
// moves backwards, and counts the call, which may change what the next
// cycle decides (NextChange). It changes nothing else; a call that goes
// on to change state commits now with advance.
func (s *Scheduler) tick(op string, now time.Time) error {
	s.calls++
	return s.checkNow(op, now)
}

// checkNow refuses a now past RFC 3339 or before the scheduler's clock.
// Unlike tick it does not count a call: Checkpointed uses it, since a
// checkpoint moves only what a victim costs (see NextChange).
func (s *Scheduler) checkNow(op string, now time.Time) error {
	if !inRFC3339(now) {
		return refuse(op, "", ErrInvalid, "now %v is past what RFC 3339 holds (years 0000-9999)", now)
	}
	if now.Before(s.now) {
		return refuse(op, "", ErrTimeReversed, "now %s is before %s", now.Format(time.RFC3339), s.now.Format(time.RFC3339))
	}
	return nil
}

// inRFC3339 reports whether t is an instant RFC 3339 can write (a year
// from 0000 to 9999, in its own location and in UTC), so that a snapshot
// holding it can be persisted with encoding/json.
func inRFC3339(t time.Time) bool {
	y, u := t.Year(), t.UTC().Year()
	return y >= 0 && y <= 9999 && u >= 0 && u <= 9999
}

// advance commits a checked now: the one place the scheduler's clock
// moves.
func (s *Scheduler) advance(now time.Time) {
	if now.After(s.now) {
		s.now = now
	}
}

// MaxEvents bounds the events the scheduler keeps between two cycles. A
// host that calls Schedule rarely (or never) while much happens gets the
// first MaxEvents of them and Decisions.EventsDropped counts the rest: the
// memory it holds stays bounded whatever the host does.
const MaxEvents = 1 << 16

// KeepEvents sets whether the scheduler keeps events for Decisions.Events
// (it does from New and Restore). A host that reads none, such as a
// forecast on a Fork, turns them off: later calls and cycles keep no
// event and count none as dropped; events kept before the call are still
// delivered. Decisions are the same either way.
func (s *Scheduler) KeepEvents(keep bool) { s.noEvents = !keep }

func (s *Scheduler) emit(e Event) {
	s.emitted++
	if s.noEvents {
		return
	}
	if s.events == nil {
		// The slice goes to the host with the cycle's Decisions; size the
		// next one like the last, within reason, so a busy cycle does not
		// regrow it and a burst does not pin a huge slice.
		s.events = make([]Event, 0, min(max(4, s.lastEvents), 4096))
	}
	if len(s.events) >= MaxEvents {
		s.dropped++
		return
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
	if w.Drain.GracePeriod > MaxGrace {
		return nil, refuse(op, w.ID, ErrInvalid, "drain.gracePeriod %s beyond MaxGrace %s", w.Drain.GracePeriod, MaxGrace)
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
	for _, m := range w.Flavors {
		// A model set is charged, until placed, for its first model that
		// its queue serves and the fleet has.
		if f, ok := s.tree.Flavor(m); flavor == "" && ok && s.tree.Serves(q, f) && s.hasFlavor(m) {
			flavor = m
		}
	}
	if flavor == "" && len(w.Flavors) == 0 {
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
	if w.Booking != "" {
		b, ok := s.cal.Booking(w.Booking)
		switch {
		case !ok:
			return nil, refuse(op, w.ID, ErrUnknownBooking, "%q is not an approved booking", w.Booking)
		case b.Queue != w.Queue || b.Flavor != flavor:
			return nil, refuse(op, w.ID, ErrInvalid, "booking %q is for queue %q, flavor %q", w.Booking, b.Queue, b.Flavor)
		}
	}
	// A gang larger than every eligible node put together, or than all
	// the quota its queue could ever reach, can never run; an elastic one
	// is judged at its minimum.
	// Restored work was accepted before and adopted work runs: a quota
	// edited since may make it wait or be reclaimed, never refuse it.
	least, leastMilli := minimum(&w)
	if !accepted(op) && len(w.Flavors) < 2 && int64(least) > s.tree.Potential(q, f) {
		return nil, refuse(op, w.ID, ErrNeverFits, "needs at least %d GPUs, queue %q can reach at most %d", least, w.Queue, s.tree.Potential(q, f))
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
		if _, ok := e.w.Accepts(s.fleet.GroupFlavor(g)); !ok || (len(w.Pools) > 0 && !slices.Contains(w.Pools, s.fleet.GroupPool(g))) {
			continue
		}
		for d := lo; d < hi; d++ {
			largest = max(largest, s.fleet.Stats(d, g).GPUs)
		}
	}
	// Shares count too: forty half GPUs bound to one node need 20 GPUs.
	if need := ceilGPUs(leastMilli); need > largest {
		return nil, refuse(op, w.ID, ErrNeverFits, "needs at least %d GPUs, the largest eligible %s has %d", need, s.fleet.LevelName(level), largest)
	}
	if err := checkTotals(op, &e.w); err != nil {
		return nil, err
	}
	if err := s.checkSharing(op, e); err != nil {
		return nil, err
	}
	if err := s.checkReach(op, e); err != nil {
		return nil, err
	}
	return e, nil
}

// accepted reports whether op brings in work the scheduler took before
// (restore) or that already runs (adopt), which quota reach never refuses.
func accepted(op string) bool { return op == "restore" || op == "adopt" }

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
	s.advance(now)
	s.track(e, now)
	s.emit(s.event(EventSubmitted, now, e))
	return nil
}

// track files a resolved entry as pending, in the ledger and the queue.
func (s *Scheduler) track(e *entry, now time.Time) { s.trackAs(e, now, 0) }

// trackAs is track with the submission counter an adopted workload had
// (adoptSeq; 0: the next).
func (s *Scheduler) trackAs(e *entry, now time.Time, seq uint64) {
	rec, err := s.books.Track(&e.w, e.queue, e.flavor, e.policy())
	if err != nil {
		panic("fleet: a resolved workload refused by the ledger: " + err.Error())
	}
	e.rec, e.submitted, e.seq = rec, now, s.adoptSeq(seq)
	rec.Submitted = now
	s.work[e.w.ID] = e
	s.enqueue(e)
}

// policy is what the priority class decides about e as a holder.
func (e *entry) policy() ledger.Policy {
	return ledger.Policy{
		// The drain contract: work that does not checkpoint is never a
		// victim unless its priority class says so; a booking's work is
		// never one in its window.
		Preemptible: (e.w.Drain.Preemptible || e.class.EvictWithoutCheckpoint) && e.w.Booking == "",
		MinRuntime:  e.class.MinRuntime,
		Grace:       e.grace(),
	}
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
	s.advance(now)
	ev := s.event(EventCancelled, now, e)
	s.finish(now, e, gang.ExitCancelled)
	s.emit(ev)
	return nil
}

// Exited records that a workload ended. Its GPUs return (or pass to the
// nominations they were drained for) and its quota usage is released.
func (s *Scheduler) Exited(now time.Time, id string, how gang.ExitReason) error {
	if err := s.tick("exited", now); err != nil {
		return err
	}
	e, ok := s.work[id]
	if !ok {
		return refuse("exited", id, ErrUnknownID, "")
	}
	if !e.state().HoldsGPUs() {
		return refuse("exited", id, ErrBadState, "workload is %s, not running", e.state())
	}
	if !how.Valid() {
		return refuse("exited", id, ErrInvalid, "unknown exit reason %d", how)
	}
	if !gang.CanTransition(e.state(), how.State()) {
		var can []string
		for r := gang.ExitFinished; r.Valid(); r++ {
			if gang.CanTransition(e.state(), r.State()) {
				can = append(can, r.String())
			}
		}
		why := ""
		if how == gang.ExitDrained || how == gang.ExitKilled {
			why = " (no drain was asked of it)"
		}
		return refuse("exited", id, ErrBadState, "workload is %s: it cannot end %s%s; report how it ended: %s",
			e.state(), how, why, strings.Join(can, ", "))
	}
	s.advance(now)
	ev := s.event(EventExited, now, e)
	ev.Exit, ev.Runtime = how, now.Sub(e.rec.Started)
	if d := e.rec.Drain; d != nil {
		ev.Reason = d.Reason.String()
	}
	if !s.requeueMover(now, e, how) {
		s.finish(now, e, how)
	}
	s.emit(ev)
	return nil
}

// Checkpointed records that a running workload saved its state at at,
// which lowers the cost of preempting it. at is the checkpoint's own time
// (at most now, not before the run started): a host that learns of a
// checkpoint late passes when it was taken. A checkpoint older than one
// already recorded changes nothing.
func (s *Scheduler) Checkpointed(now time.Time, id string, at time.Time) error {
	if err := s.checkNow("checkpointed", now); err != nil {
		return err
	}
	e, ok := s.work[id]
	if !ok {
		return refuse("checkpointed", id, ErrUnknownID, "")
	}
	if !e.state().HoldsGPUs() {
		return refuse("checkpointed", id, ErrBadState, "workload is %s, not running", e.state())
	}
	if err := s.books.Checkpoint(id, at, now); err != nil {
		return refuse("checkpointed", id, ErrInvalid, "%v", err)
	}
	s.advance(now)
	ev := s.event(EventCheckpointed, now, e)
	ev.Checkpoint = at
	s.emit(ev)
	return nil
}

// RequestDrain asks for a running workload to be drained for the host's
// own reasons (maintenance, an operator): it returns the Drain the host
// carries out now, with a deadline grace from now (0: the workload's
// contract), after which every cycle asks for a kill. Nobody is nominated
// for its GPUs: they return to the pool when it exits. A workload already
// draining keeps its deadline. It is refused for an unknown workload, one
// not running, or a grace outside 0 to MaxGrace.
func (s *Scheduler) RequestDrain(now time.Time, id string, grace time.Duration) (Drain, error) {
	if err := s.tick("drain", now); err != nil {
		return Drain{}, err
	}
	e, ok := s.work[id]
	if !ok {
		return Drain{}, refuse("drain", id, ErrUnknownID, "")
	}
	if !e.state().HoldsGPUs() {
		return Drain{}, refuse("drain", id, ErrBadState, "workload is %s, not running", e.state())
	}
	if grace < 0 || grace > MaxGrace {
		return Drain{}, refuse("drain", id, ErrInvalid, "grace %s outside 0 to MaxGrace (%s)", grace, MaxGrace)
	}
	if grace == 0 {
		grace = e.grace()
	}
	was := e.state()
	r, err := s.books.DrainFor(id, now, now.Add(grace), gang.DrainHost)
	if err != nil {
		panic("fleet: the ledger refused a checked drain: " + err.Error())
	}
	s.advance(now)
	d := Drain{ID: id, Deadline: r.Drain.Deadline, Reason: r.Drain.Reason, Beneficiaries: slices.Clone(r.Drain.Beneficiaries)}
	if was != gang.Draining {
		ev := s.event(EventDrainStarted, now, e)
		ev.Reason, ev.Deadline = d.Reason.String(), d.Deadline
		s.emit(ev)
	}
	return d, nil
}

// finish removes a workload: the ledger releases what it holds and
// dissolves what it was promised.
func (s *Scheduler) finish(now time.Time, e *entry, how gang.ExitReason) {
	if _, ok := s.books.Nomination(e.w.ID); ok {
		s.dissolve(now, e.w.ID, "beneficiary "+how.String())
	}
	if _, _, err := s.books.Exit(e.w.ID, how); err != nil {
		panic("fleet: the ledger refused a checked exit: " + err.Error())
	}
	delete(s.work, e.w.ID)
	s.dequeue(e)
	s.idle.forget(e.w.ID)
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
	if !h.Valid() {
		return nil, &Error{Op: "node-health", Detail: fmt.Sprintf("node %q: unknown health %d", node, h), Err: ErrInvalidHealth}
	}
	if h == topology.Absent || s.fleet.Health(n) == topology.Absent {
		return nil, refuse("node-health", "", ErrBadState, "node %q: RemoveNode and AddNode move nodes out of and into service", node)
	}
	s.advance(now)
	var affected []string
	if h == topology.Down {
		for _, id := range s.books.OnNode(n) {
			e := s.work[id]
			if e.w.Drain.SurvivesNodeLoss && e.state() == gang.Admitted && !e.rec.HasClaims() {
				// Hot-swap: the gang runs on; its pods there wait for a
				// replacement node (see Schedule).
				lost, err := s.books.LosePods(id, n, now)
				if err != nil {
					panic("fleet: losing the pods of a holder on its node: " + err.Error())
				}
				ev := s.event(EventPodsLost, now, e)
				ev.Node = node
				for _, x := range lost {
					ev.LostGPUs += x.Pod.GPUs
				}
				s.emit(ev)
				continue
			}
			affected = append(affected, id)
			ev := s.event(EventExited, now, e)
			ev.Exit, ev.Runtime, ev.Node = gang.ExitNodeLost, now.Sub(e.rec.Started), node
			s.finish(now, e, gang.ExitNodeLost)
			s.emit(ev)
		}
	}
	if h != topology.Healthy {
		// A beneficiary must not start on a node that takes no new work:
		// its nomination dissolves and it queues again.
		for _, nom := range s.nominationsInQueueOrder() {
			if targetOnNode(nom.Target, n) {
				s.dissolve(now, nom.Beneficiary, "nominated node "+node+" "+h.String())
			}
		}
		s.dropMovesTo(now, n)
	}
	if err := s.books.SetHealth(n, h); err != nil {
		panic(fmt.Sprintf("fleet: health of a known node refused: %v", err))
	}
	kind := EventNodeUp
	if h != topology.Healthy {
		kind = EventNodeDown
	}
	s.emit(Event{Kind: kind, Time: now, Node: node, Affected: slices.Clone(affected), Reason: h.String()})
	s.bookedHealth(now, n, h)
	return affected, nil
}

// assignment turns a host's pod list into an assignment on this fleet,
// checking every pod against e's spec, flavor and pools.
func (s *Scheduler) assignment(op string, e *entry, pods []PodAssignment) (placement.Assignment, error) {
	w := &e.w
	a := placement.Assignment{Workload: w.ID}
	byName := map[string]int{}
	for i, ps := range w.PodSets {
		byName[ps.Name] = i
	}
	seen := map[[2]int]bool{} // pod set and index: each pod once
	for _, p := range pods {
		n, ok := s.fleet.Node(p.Node)
		if !ok {
			return a, refuse(op, w.ID, ErrUnknownNode, "%q", p.Node)
		}
		// The node must be one the workload may use: quota is charged for
		// its flavor.
		if g := s.fleet.NodeGroup(n); s.fleet.GroupFlavor(g) != w.Flavor || len(w.Pools) > 0 && !slices.Contains(w.Pools, s.fleet.GroupPool(g)) {
			return a, refuse(op, w.ID, ErrInvalid, "node %q is not of flavor %q or of its pools", p.Node, w.Flavor)
		}
		ps, ok := byName[p.PodSet]
		var pod placement.Pod
		if ok {
			pod, ok = s.hostPod(&w.PodSets[ps], p, n)
		}
		if !ok || p.Index < 0 || p.Index >= w.PodSets[ps].Count || seen[[2]int{ps, p.Index}] {
			return a, refuse(op, w.ID, ErrInvalid, "pod %s[%d] does not match the spec", p.PodSet, p.Index)
		}
		seen[[2]int{ps, p.Index}] = true
		pod.PodSet = ps
		a.Pods = append(a.Pods, pod)
	}
	if _, ok := ledger.SizeOf(w, a.Pods); !ok {
		return a, refuse(op, w.ID, ErrInvalid, "%d pods given, the spec has %d (elastic pod sets: at least their minimum)", len(a.Pods), w.Pods())
	}
	a.Span = s.fleet.Span(podNodes(a))
	a.Group = s.fleet.NodeGroup(a.Pods[0].Node)
	return a, nil
}

func podNodes(a placement.Assignment) []topology.NodeID {
	out := make([]topology.NodeID, len(a.Pods))
	for i, p := range a.Pods {
		out[i] = p.Node
	}
	return out
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
	if !fair && custom == nil {
		return // pending lists them so already (queueLess)
	}
	share := map[quota.NodeID]float64{}
	for _, e := range pending {
		sh, ok := share[e.queue]
		if !ok && fair {
			sh = s.tree.DominantShare(e.queue).Value()
			share[e.queue] = sh
		}
		e.view = Pending{W: &e.w, Priority: e.priority, Submitted: e.submitted, DominantShare: sh}
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
			if c := cmp.Compare(a.view.DominantShare, b.view.DominantShare); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(a.seq, b.seq); c != 0 {
			return c
		}
		return cmp.Compare(a.w.ID, b.w.ID)
	})
}

// queueLess is order without fair sharing or a host's order: higher
// priority first, then earlier submission, then ID. Neither changes
// while a workload is pending, so the pending work is kept so ordered
// (Scheduler.ordered) rather than sorted every cycle.
func queueLess(a, b *entry) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	return a.w.ID < b.w.ID
}

// nominationsInQueueOrder lists the open nominations in their
// beneficiaries' queue order (queueLess), which a host that rebuilds the
// scheduler by adoption restores, rather than in the order they were
// accepted: what a cycle does to several of them comes out in the same
// order after a restart.
func (s *Scheduler) nominationsInQueueOrder() []*ledger.Nomination {
	noms := s.books.Nominations()
	slices.SortStableFunc(noms, func(a, b *ledger.Nomination) int {
		return compareQueue(s.work[a.Beneficiary], s.work[b.Beneficiary])
	})
	return noms
}

// compareQueue orders a and b as queueLess does, for slices.SortFunc.
func compareQueue(a, b *entry) int {
	switch {
	case queueLess(a, b):
		return -1
	case queueLess(b, a):
		return 1
	}
	return 0
}

// enqueue files e with the pending workloads.
func (s *Scheduler) enqueue(e *entry) {
	s.queued[e.w.ID] = e
	s.ordered.ReplaceOrInsert(e)
}

// dequeue takes e off the pending workloads (if it is one).
func (s *Scheduler) dequeue(e *entry) {
	if s.queued[e.w.ID] == e {
		delete(s.queued, e.w.ID)
		s.ordered.Delete(e)
	}
}
