package metrics

import (
	"fmt"
	"math"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// Recorder turns the scheduler's events, its snapshots and the host's
// usage samples into the figures of a Report. It is a deterministic state
// machine like the Scheduler: not safe for concurrent use, no clock of its
// own (every input carries its time), no goroutines.
//
// Its memory is the running workloads plus one bucket per Config.Bucket of
// recorded time (each a few KB per team); it keeps no per-event history.
type Recorder struct {
	cfg   Config
	st    store
	clock int64 // latest input time, Unix nanoseconds
	began bool

	// Interned names: small IDs index the buckets' slices.
	teams    intern
	flavors  intern
	reasons  intern
	classes  intern
	levels   intern
	leaves   intern // leaves crossed by gangs spanning several (uplinks.go)
	cells    map[cellKey]int32
	cellKeys []cellKey
	causes   map[causeKey]int32
	causeKey []causeKey
	price    []Flavor // by flavor ID

	live     map[string]int32 // workload ID -> index in work
	work     []workload
	freeWork []int32

	snap      snapState
	unmatched int
	overflow  map[int32]overflowState // per team: overflow in progress
	// parent is each quota node's parent, from the latest snapshot.
	parent map[string]string
}

type cellKey struct {
	team   int32
	shape  gang.Shape
	flavor int32
}

type causeKey struct {
	team, reason int32
}

// workload is the state of one running workload.
type workload struct {
	id        string
	cell      int32
	team      int32
	class     int32
	flavor    int32
	gpus      float64
	borrowed  float64
	crosses   bool
	lastT     int64 // integrated up to here
	lastCkpt  int64 // admission or latest checkpoint
	sampled   bool
	sm        float64
	flops     float64 // achieved FLOP/s of the whole workload
	idleSince int64   // start of the current idle stretch, or noIdle
	lowSince  int64   // start of the current busy-but-under-the-MFU-floor stretch, or noIdle
	shape     gang.Shape
	draining  bool
	killed    bool
	drainAt   int64
	cause     int32 // the drain's (team, reason) while draining
	split     bool  // a pod an elastic workload gave up: its workload runs on, nothing restarts
}

const noIdle = math.MinInt64

// intern maps names to dense IDs in order of appearance.
type intern struct {
	ids   map[string]int32
	names []string
}

func (in *intern) id(name string) int32 {
	if id, ok := in.ids[name]; ok {
		return id
	}
	if in.ids == nil {
		in.ids = map[string]int32{}
	}
	id := int32(len(in.names))
	in.ids[name] = id
	in.names = append(in.names, name)
	return id
}

// New returns a Recorder for cfg, or a *ConfigError.
func New(cfg Config) (*Recorder, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Recorder{
		cfg:    cfg,
		st:     newStore(int64(cfg.Bucket), math.MinInt64, math.MaxInt64),
		cells:  map[cellKey]int32{},
		causes: map[causeKey]int32{},
		live:   map[string]int32{},
	}, nil
}

// Config returns the Recorder's configuration with defaults filled in.
func (r *Recorder) Config() Config { return r.cfg }

// Unmatched counts events that named a workload the Recorder was not
// tracking in the right state (an exit with no admission, a second
// admission of a running workload), as when recording starts mid-stream.
// They are skipped.
func (r *Recorder) Unmatched() int { return r.unmatched }

// Live is the number of running workloads the Recorder tracks.
func (r *Recorder) Live() int { return len(r.live) }

func (r *Recorder) flavorID(name string) int32 {
	id := r.flavors.id(name)
	if int(id) == len(r.price) {
		f, ok := r.cfg.Flavors[name]
		if !ok {
			f = r.cfg.Default
		}
		r.price = append(r.price, f)
	}
	return id
}

func (r *Recorder) cellID(team int32, shape gang.Shape, flavor int32) int32 {
	k := cellKey{team, shape, flavor}
	if id, ok := r.cells[k]; ok {
		return id
	}
	id := int32(len(r.cellKeys))
	r.cells[k] = id
	r.cellKeys = append(r.cellKeys, k)
	return id
}

// CauseNodeLost is the cause of the runs a failed node ended. They are
// reported apart from preemptions (Report.NodeLosses) and are not part
// of the preemption tax.
const CauseNodeLost = "node-lost"

func (r *Recorder) causeID(team int32, reason string) int32 {
	k := causeKey{team, r.reasons.id(reason)}
	if id, ok := r.causes[k]; ok {
		return id
	}
	id := int32(len(r.causeKey))
	r.causes[k] = id
	r.causeKey = append(r.causeKey, k)
	return id
}

// checkTime refuses a zero time or one before the clock.
func (r *Recorder) checkTime(what string, t time.Time, clock int64, began bool) *InputError {
	if t.IsZero() {
		return &InputError{What: what, Detail: "zero time", Err: ErrInvalidInput}
	}
	if began && t.UnixNano() < clock {
		return &InputError{What: what, Detail: fmt.Sprintf("at %s, before %s", t.UTC().Format(time.RFC3339Nano), time.Unix(0, clock).UTC().Format(time.RFC3339Nano)), Err: ErrOutOfOrder}
	}
	return nil
}

func (r *Recorder) tick(t time.Time) {
	r.clock = t.UnixNano()
	r.began = true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// checkEvent refuses an event that is malformed on its own. Whether it
// matches a running workload is not checked: unmatched events are skipped.
func (r *Recorder) checkEvent(e *fleet.Event, clock int64, began bool) *InputError {
	if err := r.checkTime("event", e.Time, clock, began); err != nil {
		err.Workload = e.Workload
		return err
	}
	bad := func(format string, args ...any) *InputError {
		return &InputError{What: "event", Workload: e.Workload, Detail: fmt.Sprintf(format, args...), Err: ErrInvalidInput}
	}
	switch {
	case !e.Kind.Valid():
		return bad("unknown kind %d", e.Kind)
	case e.GPUs < 0:
		return bad("negative GPUs %d", e.GPUs)
	case e.BorrowedGPUs < 0 || e.BorrowedGPUs > e.GPUs:
		return bad("borrowed GPUs %d outside 0-%d", e.BorrowedGPUs, e.GPUs)
	case e.Wait < 0:
		return bad("negative wait %v", e.Wait)
	case !(e.LostGPUSeconds >= 0) || math.IsInf(e.LostGPUSeconds, 0):
		return bad("lost GPU-seconds %v", e.LostGPUSeconds)
	}
	switch e.Kind {
	case fleet.EventNodeDown, fleet.EventNodeUp, fleet.EventQueueChanged, fleet.EventNodeRemoved, fleet.EventNodeAdded, fleet.EventOverflow,
		fleet.EventBlockBroken, fleet.EventBlockWhole, fleet.EventRelocated:
	default:
		if e.Workload == "" {
			return bad("%s without a workload", e.Kind)
		}
	}
	return nil
}

// Record takes one event. A malformed or out-of-order event is refused
// with an *InputError and changes nothing.
func (r *Recorder) Record(e fleet.Event) error {
	if err := r.checkEvent(&e, r.clock, r.began); err != nil {
		return err
	}
	r.apply(&e)
	return nil
}

// RecordAll takes a batch of events, as Decisions.Events holds them. It
// checks the whole batch first: if any event is refused, none is
// recorded, and the *InputError's Index is its position (from 1).
// Recording a batch or its events one by one gives the same figures.
func (r *Recorder) RecordAll(events []fleet.Event) error {
	clock, began := r.clock, r.began
	for i := range events {
		if err := r.checkEvent(&events[i], clock, began); err != nil {
			err.Index = i + 1
			return err
		}
		clock, began = events[i].Time.UnixNano(), true
	}
	for i := range events {
		r.apply(&events[i])
	}
	return nil
}

func (r *Recorder) apply(e *fleet.Event) {
	r.tick(e.Time)
	t := e.Time.UnixNano()
	switch e.Kind {
	case fleet.EventSubmitted:
		team := r.teams.id(e.Queue)
		r.st.point(t).cell(r.cellID(team, e.Shape, r.flavorID(e.Flavor))).Submissions++
	case fleet.EventAdmitted:
		r.admit(e, t)
	case fleet.EventDrainStarted:
		if e.Of != "" {
			r.shrunk(e, t)
			break
		}
		r.drainStarted(e, t)
	case fleet.EventGrown:
		r.grown(e, t)
	case fleet.EventKilled:
		r.killed(e, t)
	case fleet.EventExited, fleet.EventCancelled:
		r.exited(e, t)
	case fleet.EventCheckpointed:
		if w := r.find(e.Workload); w != nil {
			w.lastCkpt = t
		} else {
			r.unmatched++
		}
	case fleet.EventNodeDown:
		r.st.point(t).fleet.NodeDowns++
	case fleet.EventPodsLost:
		r.podsLost(e, t)
	case fleet.EventReplaced:
		if w := r.find(e.Workload); w != nil {
			c := r.st.point(t).cell(w.cell)
			c.HotSwaps++
			c.HotSwapWait += e.Wait.Seconds()
		} else {
			r.unmatched++
		}
	case fleet.EventOverflow:
		r.overflowed(e, t)
	case fleet.EventNodeUp, fleet.EventNominationDissolved:
		// Capacity comes from snapshots; nominations end in an admission
		// or a later drain, which are recorded when they happen.
	}
}

// overflowed integrates a queue's overflow: the GPUs it was short since
// its previous overflow event, spread over the buckets between; a 0 ends
// it.
func (r *Recorder) overflowed(e *fleet.Event, t int64) {
	team := r.teams.id(e.Queue)
	if r.overflow == nil {
		r.overflow = map[int32]overflowState{}
	}
	if o, ok := r.overflow[team]; ok && t > o.since {
		cell := r.cellID(team, gang.Inference, r.flavorID(e.Flavor))
		r.st.spread(o.since, t, func(bk *bucket, secs float64) {
			bk.cell(cell).Overflow += o.gpus * secs
		})
	}
	if e.GPUs == 0 {
		delete(r.overflow, team)
		return
	}
	r.overflow[team] = overflowState{gpus: float64(e.GPUs), since: t}
}

// overflowState is a queue's overflow in progress.
type overflowState struct {
	gpus  float64
	since int64
}

// podsLost charges a node loss under a gang that runs on (hot-swap): the
// lost pods' share of the work since the last checkpoint is lost to the
// node, the rest is what failing whole would have cost and did not.
func (r *Recorder) podsLost(e *fleet.Event, t int64) {
	w := r.find(e.Workload)
	if w == nil || w.gpus <= 0 {
		r.unmatched++
		return
	}
	work, restart := r.lost(w, t)
	share := min(1, float64(e.LostGPUs)/w.gpus)
	b := r.st.point(t)
	c := b.cell(w.cell)
	c.NodeLost += (work + restart) * share
	c.HotSwapSaved += (work + restart) * (1 - share)
	cs := b.cause(r.causeID(w.team, CauseNodeLost))
	cs.Work += work * share
	cs.Restart += restart * share
}

func (r *Recorder) find(id string) *workload {
	i, ok := r.live[id]
	if !ok {
		return nil
	}
	return &r.work[i]
}

func (r *Recorder) admit(e *fleet.Event, t int64) {
	if _, ok := r.live[e.Workload]; ok {
		r.unmatched++
		return
	}
	team := r.teams.id(e.Queue)
	flavor := r.flavorID(e.Flavor)
	cell := r.cellID(team, e.Shape, flavor)
	var i int32
	if n := len(r.freeWork); n > 0 {
		i = r.freeWork[n-1]
		r.freeWork = r.freeWork[:n-1]
	} else {
		i = int32(len(r.work))
		r.work = append(r.work, workload{})
	}
	r.work[i] = workload{
		id: e.Workload, cell: cell, team: team, class: r.classes.id(e.Class), flavor: flavor,
		gpus: float64(e.GPUs), borrowed: float64(e.BorrowedGPUs), crosses: e.CrossesSpines,
		lastT: t, lastCkpt: t, idleSince: noIdle, lowSince: noIdle, shape: e.Shape,
	}
	r.live[e.Workload] = i

	b := r.st.point(t)
	c := b.cell(cell)
	c.Admissions++
	if e.CrossesSpines {
		c.CrossSpineGangs++
	}
	w := e.Wait.Seconds()
	b.waitOf(team).add(w, 1)
	b.waitClass[gangClass(e.GPUs)].add(w, 1)
}

// lost is what stopping w at t throws away, in GPU-seconds: the work
// since its latest checkpoint (or admission), and the restart. A
// stateless inference replica has no work to lose: it pays its restart
// and warm-up (Config.ReplicaRestartTime) only.
func (r *Recorder) lost(w *workload, t int64) (work, restart float64) {
	if w.shape == gang.Inference {
		return 0, w.gpus * r.cfg.ReplicaRestartTime.Seconds()
	}
	work = w.gpus * float64(max(0, t-w.lastCkpt)) / 1e9
	if w.split {
		return work, 0
	}
	return work, w.gpus * r.cfg.RestartTime.Seconds()
}

// drainStarted counts a preemption when the drain begins; what it
// loses is measured when the victim exits (see exited).
func (r *Recorder) drainStarted(e *fleet.Event, t int64) {
	w := r.find(e.Workload)
	if w == nil || w.draining {
		r.unmatched++
		return
	}
	reason := e.Reason
	if reason == "" {
		reason = "unspecified"
	}
	w.cause = r.causeID(w.team, reason)
	b := r.st.point(t)
	b.cell(w.cell).Preemptions++
	b.cause(w.cause).Count++
	w.draining, w.drainAt = true, t
}

// killed books a deadline miss. The victim never finished a checkpoint
// after the drain began, so its exit loses the work since its latest one.
func (r *Recorder) killed(e *fleet.Event, t int64) {
	w := r.find(e.Workload)
	if w == nil || !w.draining {
		r.unmatched++
		return
	}
	b := r.st.point(t)
	b.cell(w.cell).Kills++
	b.cause(w.cause).Kills++
	w.killed = true
}

func (r *Recorder) exited(e *fleet.Event, t int64) {
	i, ok := r.live[e.Workload]
	if !ok {
		if e.Kind != fleet.EventCancelled {
			r.unmatched++
		}
		return
	}
	w := &r.work[i]
	r.integrate(&r.st, w, t)
	r.closeIdle(&r.st, w, t)
	r.closeLow(&r.st, w, t)
	switch {
	case w.draining:
		// A victim that checkpointed on SIGTERM reported it before its
		// exit, so only work after that checkpoint is lost.
		work, restart := r.lost(w, t)
		b := r.st.point(t)
		b.drain.add(float64(t-w.drainAt)/1e9, 1)
		c := b.cell(w.cell)
		c.Lost += work + restart
		c.Restart += restart
		cs := b.cause(w.cause)
		cs.Work += work
		cs.Restart += restart
	case e.Exit == gang.ExitNodeLost:
		work, restart := r.lost(w, t)
		b := r.st.point(t)
		c := b.cell(w.cell)
		c.NodeLost += work + restart
		c.NodeLosses++
		cs := b.cause(r.causeID(w.team, CauseNodeLost))
		cs.Count++
		cs.Work += work
		cs.Restart += restart
	}
	delete(r.live, e.Workload)
	*w = workload{}
	r.freeWork = append(r.freeWork, i)
}

// integrate books w's allocation and use over [w.lastT, t) into st, with
// its current sample held constant. It does not move w.lastT: the Report's
// overlay integrates without changing the workload.
func (r *Recorder) integrate(st *store, w *workload, t int64) {
	if t <= w.lastT {
		return
	}
	flops := w.flops
	st.spread(w.lastT, t, func(bk *bucket, secs float64) {
		c := bk.cell(w.cell)
		g := w.gpus * secs
		c.Allocated += g
		c.Borrowed += w.borrowed * secs
		if w.crosses {
			c.CrossSpine += g
		}
		if w.sampled {
			c.Sampled += g
			c.Used += w.sm * g
			c.UsefulFLOP += flops * secs
		}
	})
	if st == &r.st {
		w.lastT = t
	}
}

// closeLow ends w's busy-but-inefficient stretch at t, booking it if it
// outlasted Config.MFUWindow.
func (r *Recorder) closeLow(st *store, w *workload, t int64) {
	r.closeStretch(st, w, &w.lowSince, int64(r.cfg.MFUWindow), t, func(c *sums, g float64) { c.LowMFU += g })
}

// closeIdle ends w's idle stretch at t, booking it if it outlasted the
// window. The Report's overlay books a stretch still open without ending it.
func (r *Recorder) closeIdle(st *store, w *workload, t int64) {
	r.closeStretch(st, w, &w.idleSince, int64(r.cfg.IdleWindow), t, func(c *sums, g float64) { c.Idle += g })
}

// closeStretch books w's stretch from *since to t, GPU-seconds added by
// add, if it outlasted window, and ends it (on the live store only).
func (r *Recorder) closeStretch(st *store, w *workload, since *int64, window, t int64, add func(c *sums, gpuSeconds float64)) {
	if *since == noIdle {
		return
	}
	if t-*since > window {
		st.spread(*since, t, func(bk *bucket, secs float64) {
			add(bk.cell(w.cell), w.gpus*secs)
		})
	}
	if st == &r.st {
		*since = noIdle
	}
}
