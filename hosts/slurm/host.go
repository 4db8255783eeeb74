package slurm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/hosts/host"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Clock is where the host reads the time: the wall clock in production,
// a virtual one in tests (host.ShiftedClock, Replay).
type Clock = host.Clock

// WallClock reads time.Now.
type WallClock = host.WallClock

// Options are what a Host is built from besides its Config.
type Options struct {
	// Slurm is the backend the host reads and acts through.
	Slurm Slurm
	// Quota is the quota tree (a Kueue file through importer/kueue, or a
	// fleet quota spec): Slurm has none to import.
	Quota  quota.Spec
	Policy fleet.Policy
	// Clock defaults to WallClock.
	Clock  Clock
	Logger *slog.Logger
	// Observe, when set, sees every cycle's decisions (metrics, tests).
	Observe func(fleet.Decisions)
	// Metrics, when set, receives every cycle's events and a snapshot
	// after it; Run serves it at /metrics when Config.Listen is set (the
	// host makes one then if Metrics is nil).
	Metrics *host.Metrics
}

// tracked is what the host knows of one job it gave the scheduler.
type tracked struct {
	spec    gang.Workload
	requeue bool
	// running: admitted (or adopted); seen: Slurm showed it on its nodes
	// since.
	running, seen bool
	killed        bool
	// admitted is when the host released it; started when the scheduler
	// counts it started.
	admitted, started time.Time
	// comment is the Comment last written.
	comment string
}

// Host carries fleet's decisions out on a Slurm cluster. Each cycle reads
// the nodes and jobs of the managed partitions, brings the scheduler in
// line (health, submissions, exits), runs Schedule, persists its state,
// then acts: kills, drains (requeuehold or SIGTERM), admissions
// (ReqNodeList, then release), and pending reasons in Comment.
type Host struct {
	cfg     Config
	sl      Slurm
	clock   Clock
	log     *slog.Logger
	quota   quota.Spec
	policy  fleet.Policy
	observe func(fleet.Decisions)
	metrics *host.Metrics

	mu       sync.Mutex // guards s for Scheduler; cycles run one at a time
	s        *fleet.Scheduler
	fleetKey string
	health   map[string]topology.Health
	work     map[string]*tracked
	// bad holds, per job refused, the fingerprint of the job refused:
	// it is not tried again until the job changes.
	bad   map[string]string
	state State
	// cycles counts the cycles run.
	cycles int
	// ready is set once a cycle has built the scheduler (/readyz reads it
	// without waiting for the cycle under way).
	ready atomic.Bool
}

// New builds a host; it reads its state file, if any. Nothing runs
// until Cycle or Run.
func New(cfg Config, o Options) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.Slurm == nil {
		return nil, fmt.Errorf("%w: no Slurm backend", ErrConfig)
	}
	st, err := LoadState(cfg.StateFile)
	if err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, sl: o.Slurm, clock: o.Clock, log: o.Logger, quota: o.Quota, policy: o.Policy,
		observe: o.Observe, metrics: o.Metrics, work: map[string]*tracked{}, bad: map[string]string{}, state: st}
	if h.clock == nil {
		h.clock = WallClock{}
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.metrics == nil && cfg.Listen != "" {
		h.metrics = host.NewMetrics()
	}
	return h, nil
}

// Run runs a cycle every period until ctx ends. A failed cycle (Slurm
// unreachable) is logged and tried again at the next period. With
// Config.Listen set it serves Handler there while it runs.
func (h *Host) Run(ctx context.Context) error {
	if h.cfg.Listen != "" {
		stop, err := h.serve(h.cfg.Listen)
		if err != nil {
			return err
		}
		defer stop()
	}
	return host.Every(ctx, h.cfg.period(), func() {
		if _, err := h.Cycle(ctx); err != nil && ctx.Err() == nil {
			h.log.Error("cycle", "err", err)
		}
	})
}

// Scheduler gives f the scheduler (for metrics and tests); f must not
// keep it.
func (h *Host) Scheduler(f func(*fleet.Scheduler)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s != nil {
		f(h.s)
	}
}

// Cycles is the number of cycles run.
func (h *Host) Cycles() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cycles
}

// Cycle runs one cycle and returns its decisions.
func (h *Host) Cycle(ctx context.Context) (fleet.Decisions, error) {
	nodes, err := h.sl.Nodes(ctx, h.cfg.Partitions)
	if err != nil {
		return fleet.Decisions{}, err
	}
	jobs, err := h.sl.Jobs(ctx, h.cfg.Partitions)
	if err != nil {
		return fleet.Decisions{}, err
	}
	topo, err := h.sl.Topology(ctx)
	if err != nil {
		return fleet.Decisions{}, err
	}
	spec, health, err := h.cfg.Fleet(nodes, topo)
	if err != nil {
		return fleet.Decisions{}, err
	}
	slices.SortFunc(jobs, func(a, b Job) int { return cmpID(a.ID, b.ID) })
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	var acts []action
	if key := fleetKey(spec); h.s == nil || key != h.fleetKey {
		if acts, err = h.rebuild(now, spec, health, jobs); err != nil {
			return fleet.Decisions{}, err
		}
		h.fleetKey = key
		h.ready.Store(true)
	} else {
		h.syncHealth(now, health)
	}
	acts = append(acts, h.syncJobs(now, jobs)...)
	d := h.s.Schedule(now)
	h.cycles++
	if h.observe != nil {
		h.observe(d)
	}
	if h.metrics != nil {
		h.metrics.RecordAll(d.Events)
		h.metrics.ObserveSnapshot(h.s.Snapshot())
	}
	acts = append(acts, h.decide(now, d)...)
	if err := SaveState(h.cfg.StateFile, &h.state); err != nil {
		// Acting without the state saved would lose drains on a restart.
		return d, fmt.Errorf("slurm: state file: %w", err)
	}
	acts = append(acts, h.pending()...)
	h.carryOut(ctx, now, acts)
	return d, nil
}

func fleetKey(spec topology.Spec) string {
	var b strings.Builder
	fmt.Fprint(&b, spec.Levels)
	for _, n := range spec.Nodes {
		fmt.Fprint(&b, n.Name, n.Path, n.GPUs, n.Flavor, n.Resources)
	}
	return b.String()
}

// cmpID orders job IDs numerically ("9" before "10"), then as text.
func cmpID(a, b string) int {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
}

// syncHealth reports node health changes; the jobs the scheduler ends
// on a lost node are Slurm's to end or requeue (the host re-holds what
// comes back pending).
func (h *Host) syncHealth(now time.Time, health map[string]topology.Health) {
	for _, ch := range host.SyncHealth(h.s, now, h.health, health, h.log) {
		for _, id := range ch.Ended {
			delete(h.work, id)
			delete(h.state.Drains, id)
		}
	}
}

// fingerprint is what a refusal depends on: a job refused is tried again
// when one of these changes.
func fingerprint(j *Job) string {
	return fmt.Sprint(j.Partition, j.Account, j.QOS, j.Nodes, j.GPUsPerNode, j.GPUType, j.CPUsPerNode, j.MemoryMB, j.Switches, j.Requeue)
}

// syncJobs brings the scheduler in line with the jobs: exits, cancels,
// new submissions, holds.
func (h *Host) syncJobs(now time.Time, jobs []Job) []action {
	var acts []action
	seen := map[string]bool{}
	for i := range jobs {
		j := &jobs[i]
		if !h.cfg.Managed(j) {
			continue
		}
		seen[j.ID] = true
		t := h.work[j.ID]
		if t != nil && t.running {
			if j.OnNodes() {
				t.seen = true
				continue
			}
			if !t.seen && j.State == StatePending && !j.Held() && now.Sub(t.admitted) < h.cfg.startTimeout() {
				continue // released, not started yet
			}
			how := h.exitOf(t, j)
			if err := h.s.Exited(now, j.ID, how); err != nil {
				h.log.Warn("exit", "job", j.ID, "err", err)
			}
			h.forget(j.ID)
			t = nil
			if j.State != StatePending {
				continue
			}
		}
		if t != nil {
			switch {
			case j.Ended():
				_ = h.s.Cancel(now, j.ID)
				h.forget(j.ID)
			case j.OnNodes():
				// Started by someone else: take it as it runs.
				_ = h.s.Cancel(now, j.ID)
				h.forget(j.ID)
				acts = append(acts, h.adoptRunning(now, j, nil)...)
			case !j.Held():
				acts = append(acts, action{kind: actHold, job: j.ID})
			}
			continue
		}
		switch {
		case j.Ended():
			continue
		case j.OnNodes():
			acts = append(acts, h.adoptRunning(now, j, nil)...)
			continue
		case j.State != StatePending:
			continue
		}
		if !j.Held() {
			acts = append(acts, action{kind: actHold, job: j.ID})
		}
		fp := fingerprint(j)
		if h.bad[j.ID] == fp {
			continue
		}
		w, err := h.cfg.Workload(j)
		if err == nil {
			err = h.s.Submit(now, w)
		}
		if err != nil {
			h.bad[j.ID] = fp
			acts = append(acts, h.refused(j, err))
			continue
		}
		delete(h.bad, j.ID)
		h.state.Seq++
		h.order()[j.ID] = h.state.Seq
		h.work[j.ID] = &tracked{spec: w, requeue: j.Requeue, comment: j.Comment}
	}
	for _, id := range slices.Sorted(maps.Keys(h.work)) {
		if seen[id] {
			continue
		}
		// Gone from squeue (ended long ago, or purged).
		t := h.work[id]
		if t.running {
			_ = h.s.Exited(now, id, h.exitOf(t, &Job{State: StateCompleted}))
		} else {
			_ = h.s.Cancel(now, id)
		}
		h.forget(id)
	}
	for id := range h.bad {
		if !seen[id] {
			delete(h.bad, id)
		}
	}
	return acts
}

func (h *Host) order() map[string]uint64 {
	if h.state.Order == nil {
		h.state.Order = map[string]uint64{}
	}
	return h.state.Order
}

func (h *Host) forget(id string) {
	delete(h.work, id)
	delete(h.state.Drains, id)
	h.state.dropNomination(id)
	delete(h.state.Order, id)
}

// refused is the Comment of a job fleet cannot take.
func (h *Host) refused(j *Job, err error) action {
	msg := err.Error()
	var je *JobError
	if errors.As(err, &je) {
		msg = je.Message
	}
	h.log.Info("job refused", "job", j.ID, "why", msg)
	return action{kind: actComment, job: j.ID, text: "fleet: refused: " + msg}
}

// exitOf is how a job that left its nodes ended, for the scheduler.
func (h *Host) exitOf(t *tracked, j *Job) gang.ExitReason {
	_, draining := h.state.Drains[j.ID]
	switch {
	case t.killed:
		return gang.ExitKilled
	case draining:
		return gang.ExitDrained
	case j.State == StateCompleted:
		return gang.ExitFinished
	case j.State == StateCancelled:
		return gang.ExitCancelled
	case j.State == StateNodeFail:
		return gang.ExitNodeLost
	}
	return gang.ExitFailed
}

// adoptRunning gives the scheduler a job Slurm runs, draining when note
// is set.
func (h *Host) adoptRunning(now time.Time, j *Job, d *fleet.AdoptedDrain) []action {
	w, err := h.cfg.Workload(j)
	if err != nil {
		h.log.Warn("running job not adopted", "job", j.ID, "err", err)
		return nil
	}
	started := j.Start
	if n, ok := h.state.Drains[j.ID]; ok && d != nil && !n.Started.IsZero() {
		started = n.Started
	}
	if started.IsZero() || started.After(now) {
		started = now
	}
	submitted := j.Submit
	if submitted.After(started) {
		submitted = started
	}
	pods := make([]fleet.PodAssignment, len(j.NodeList))
	for i, n := range j.NodeList {
		pods[i] = fleet.PodAssignment{PodSet: PodSetName, Index: i, Node: n, GPUs: j.GPUsPerNode}
	}
	a := fleet.Adoption{Workload: w, Submitted: submitted, Seq: h.state.Order[j.ID], Started: started, Pods: pods, Drain: d}
	if err := h.s.Adopt(now, a); err != nil {
		if d == nil {
			h.log.Warn("running job not adopted", "job", j.ID, "err", err)
			return nil
		}
		h.log.Warn("drain not adopted; adopting the job as it runs", "job", j.ID, "err", err)
		a.Drain = nil
		delete(h.state.Drains, j.ID)
		if err := h.s.Adopt(now, a); err != nil {
			h.log.Warn("running job not adopted", "job", j.ID, "err", err)
			return nil
		}
	}
	h.work[j.ID] = &tracked{spec: w, requeue: j.Requeue, running: true, seen: true, comment: j.Comment, started: started}
	return nil
}

// rebuild makes a new scheduler from Slurm's jobs and nodes and the
// state file: running jobs adopted (draining ones with their drain),
// pending ones adopted in submission order with their nominations, then
// node health.
func (h *Host) rebuild(now time.Time, spec topology.Spec, health map[string]topology.Health, jobs []Job) ([]action, error) {
	q := h.quota
	if h.s != nil {
		q = h.s.Quota()
	}
	s, err := fleet.New(fleet.Config{Topology: spec, Quota: q, Classes: h.cfg.classes(), Policy: h.policy})
	if err != nil {
		return nil, fmt.Errorf("slurm: the cluster's fleet: %w", err)
	}
	h.s, h.work, h.bad = s, map[string]*tracked{}, map[string]string{}
	live := map[string]bool{}
	for i := range jobs {
		if h.cfg.Managed(&jobs[i]) && !jobs[i].Ended() {
			live[jobs[i].ID] = true
		}
	}
	var running, pending []*Job
	for i := range jobs {
		j := &jobs[i]
		switch {
		case !h.cfg.Managed(j) || j.Ended():
		case j.OnNodes():
			running = append(running, j)
		case j.State == StatePending:
			pending = append(pending, j)
		}
	}
	slices.SortStableFunc(running, func(a, b *Job) int { return a.Start.Compare(b.Start) })
	var acts []action
	for _, j := range running {
		var d *fleet.AdoptedDrain
		if n, ok := h.state.Drains[j.ID]; ok {
			d = n.Adopted(func(id string) bool { return live[id] })
			if n.Requeue && j.State == StateRunning {
				// Decided and saved, perhaps not carried out: carry it out.
				acts = append(acts, action{kind: actRequeue, job: j.ID})
			}
		}
		acts = append(acts, h.adoptRunning(now, j, d)...)
	}
	seq := func(j *Job) uint64 {
		if s, ok := h.state.Order[j.ID]; ok {
			return s
		}
		return 1 << 62
	}
	slices.SortStableFunc(pending, func(a, b *Job) int { return cmp.Compare(seq(a), seq(b)) })
	for _, j := range pending {
		if !j.Held() {
			acts = append(acts, action{kind: actHold, job: j.ID})
		}
		w, err := h.cfg.Workload(j)
		if err != nil {
			h.bad[j.ID] = fingerprint(j)
			acts = append(acts, h.refused(j, err))
			continue
		}
		if _, ok := h.state.Order[j.ID]; !ok {
			h.state.Seq++
			h.order()[j.ID] = h.state.Seq
		}
		submitted := j.Submit
		if submitted.After(now) || submitted.IsZero() {
			submitted = now
		}
		a := fleet.Adoption{Workload: w, Submitted: submitted, Seq: h.state.Order[j.ID], NominatedReadyBy: h.state.ReadyBy[j.ID]}
		for i, n := range h.state.Nominated[j.ID] {
			a.Nominated = append(a.Nominated, fleet.PodAssignment{PodSet: PodSetName, Index: i, Node: n, GPUs: j.GPUsPerNode})
		}
		dropped, err := host.Adopt(s, now, a)
		if dropped != nil {
			h.log.Warn("nomination not adopted", "job", j.ID, "err", dropped)
			h.state.dropNomination(j.ID)
		}
		if err != nil {
			h.bad[j.ID] = fingerprint(j)
			acts = append(acts, h.refused(j, err))
			continue
		}
		h.work[j.ID] = &tracked{spec: w, requeue: j.Requeue, comment: j.Comment}
	}
	for id := range h.state.Drains {
		if h.work[id] == nil || !h.work[id].running {
			delete(h.state.Drains, id)
		}
	}
	for id := range h.state.Nominated {
		if h.work[id] == nil || h.work[id].running {
			h.state.dropNomination(id)
		}
	}
	for id := range h.state.Order {
		if h.work[id] == nil {
			delete(h.state.Order, id)
		}
	}
	h.health = map[string]topology.Health{}
	for _, node := range slices.Sorted(maps.Keys(health)) {
		hv := health[node]
		h.health[node] = hv
		if hv == topology.Healthy {
			continue
		}
		lost, err := s.SetNodeHealth(now, node, hv)
		if err != nil {
			h.log.Warn("node health", "node", node, "err", err)
		}
		for _, id := range lost {
			h.forget(id)
		}
	}
	h.log.Info("rebuilt from Slurm", "nodes", len(spec.Nodes), "running", len(running), "pending", len(pending),
		"drains", len(h.state.Drains), "nominations", len(h.state.Nominated))
	return acts, nil
}

// decide turns a cycle's decisions into actions, in the order Decisions
// asks, and records drains and nominations in the state.
func (h *Host) decide(now time.Time, d fleet.Decisions) []action {
	var acts []action
	for _, k := range d.Kill {
		t := h.work[k.ID]
		if k.Of != "" || t == nil || t.killed {
			continue
		}
		t.killed = true
		n := h.state.Drains[k.ID]
		if n.KillAsked.IsZero() {
			n.KillAsked = now
		}
		h.state.Drains[k.ID] = n
		if n.Requeue {
			acts = append(acts, action{kind: actSignal, job: k.ID, text: "KILL"})
		} else {
			acts = append(acts, action{kind: actKill, job: k.ID})
		}
	}
	for _, dr := range d.Drain {
		t := h.work[dr.ID]
		if dr.Of != "" || t == nil {
			continue // elastic shrinks: Slurm jobs are not elastic here
		}
		if h.state.Drains == nil {
			h.state.Drains = map[string]DrainNote{}
		}
		h.state.Drains[dr.ID] = DrainNote{DrainRecord: host.DrainRecord{Since: now, Deadline: dr.Deadline,
			Reason: dr.Reason, Beneficiaries: dr.Beneficiaries}, Requeue: t.requeue, Started: t.started}
		msg := fmt.Sprintf("fleet: drained (%s) for %s: checkpoint and exit by %s", dr.Reason,
			strings.Join(dr.Beneficiaries, ","), dr.Deadline.UTC().Format(time.RFC3339))
		acts = append(acts, action{kind: actComment, job: dr.ID, text: msg})
		t.comment = msg
		if t.requeue {
			acts = append(acts, action{kind: actRequeue, job: dr.ID})
		} else {
			acts = append(acts, action{kind: actSignal, job: dr.ID, text: "TERM"})
		}
	}
	// Failed (and Replace, Grow, and Drain or Kill with Of set) never
	// name a job of this host: its jobs are fixed gangs that do not
	// survive a node loss (see the package doc). A Failed gang holds
	// nothing any more, so it is cancelled all the same.
	for _, id := range d.Failed {
		acts = append(acts, action{kind: actCancel, job: id})
	}
	for _, a := range d.Admit {
		t := h.work[a.ID]
		if t == nil {
			continue
		}
		t.running, t.seen, t.admitted, t.started = true, false, now, now
		h.state.dropNomination(a.ID)
		nodes := host.Nodes(a.Pods, len(a.Pods))
		if t.comment != "" {
			acts = append(acts, action{kind: actComment, job: a.ID, text: ""})
			t.comment = ""
		}
		acts = append(acts, action{kind: actAdmit, job: a.ID, nodes: nodes})
	}
	for _, n := range d.Nominate {
		if h.state.Nominated == nil {
			h.state.Nominated = map[string][]string{}
		}
		if h.state.ReadyBy == nil {
			h.state.ReadyBy = map[string]time.Time{}
		}
		h.state.Nominated[n.ID] = host.Nodes(n.Pods, len(n.Pods))
		h.state.ReadyBy[n.ID] = n.ReadyBy
	}
	for _, ev := range d.Events {
		if ev.Kind == fleet.EventNominationDissolved {
			h.state.dropNomination(ev.Workload)
		}
	}
	return acts
}

// pending writes, for at most CommentsPerCycle waiting jobs, the reason
// each waits when it changed.
func (h *Host) pending() []action {
	limit := h.cfg.CommentsPerCycle
	if limit <= 0 {
		limit = 64
	}
	var acts []action
	ids := slices.SortedFunc(maps.Keys(h.work), cmpID)
	for _, id := range ids {
		t := h.work[id]
		if t.running {
			continue
		}
		why, ok := host.Waiting(h.s, id)
		if !ok {
			continue
		}
		msg := "fleet: " + why
		if msg == t.comment {
			continue
		}
		if len(acts) == limit {
			break
		}
		t.comment = msg
		acts = append(acts, action{kind: actComment, job: id, text: msg})
	}
	return acts
}

// Sentence is Explain's sentence without the time of the cycle, so that
// the Comment changes only when the reason does (host.Sentence).
func Sentence(x fleet.Explanation) string { return host.Sentence(x) }

type actKind uint8

const (
	actHold actKind = iota + 1
	actAdmit
	actRequeue
	actSignal
	actCancel
	actKill
	actComment
)

// action is one Slurm command to run after the cycle.
type action struct {
	kind  actKind
	job   string
	nodes []string
	text  string
}

// carryOut runs the actions: first every action but admissions and
// pending reasons (holds, kills, drains), then the admissions (every
// ReqNodeList, then the releases in lists), then the pending reasons.
// Actions of one job keep their order; different jobs' run Workers at
// a time. A failed admission is reported to the scheduler as a failed
// start; the job, still held, is submitted again at the next cycle.
func (h *Host) carryOut(ctx context.Context, now time.Time, acts []action) {
	var first, admits, last []action
	for _, a := range acts {
		switch {
		case a.kind == actAdmit:
			admits = append(admits, a)
		case a.kind == actComment && len(admits) > 0 && a.text != "":
			last = append(last, a)
		default:
			first = append(first, a)
		}
	}
	h.parallel(ctx, first)
	failed := make([]bool, len(admits))
	host.ForEach(h.cfg.workers(), len(admits), func(i int) {
		a := admits[i]
		if err := h.sl.SetNodes(ctx, a.job, a.nodes); err != nil {
			h.log.Error("admit", "job", a.job, "nodes", a.nodes, "err", err)
			failed[i] = true
		}
	})
	var ids []string
	for i, a := range admits {
		if !failed[i] {
			ids = append(ids, a.job)
		}
	}
	const chunk = 100
	chunks := (len(ids) + chunk - 1) / chunk
	host.ForEach(h.cfg.workers(), chunks, func(c int) {
		part := ids[c*chunk : min(len(ids), (c+1)*chunk)]
		if err := h.sl.Release(ctx, part...); err != nil {
			// One at a time, to find the ones that failed.
			for _, id := range part {
				if err := h.sl.Release(ctx, id); err != nil {
					h.log.Error("release", "job", id, "err", err)
					for i := range admits {
						if admits[i].job == id {
							failed[i] = true
						}
					}
				}
			}
		}
	})
	for i, a := range admits {
		if failed[i] {
			if err := h.s.Exited(now, a.job, gang.ExitFailed); err == nil {
				h.forget(a.job)
			}
		}
	}
	h.parallel(ctx, last)
}

// parallel runs actions, those of one job in order.
func (h *Host) parallel(ctx context.Context, acts []action) {
	var jobs []string
	byJob := map[string][]action{}
	for _, a := range acts {
		if _, ok := byJob[a.job]; !ok {
			jobs = append(jobs, a.job)
		}
		byJob[a.job] = append(byJob[a.job], a)
	}
	host.ForEach(h.cfg.workers(), len(jobs), func(i int) {
		for _, a := range byJob[jobs[i]] {
			var err error
			switch a.kind {
			case actHold:
				err = h.sl.Hold(ctx, a.job)
			case actRequeue:
				err = h.sl.RequeueHold(ctx, a.job)
			case actSignal:
				err = h.sl.Signal(ctx, a.job, a.text)
			case actCancel:
				err = h.sl.Cancel(ctx, a.job)
			case actKill:
				err = h.sl.Kill(ctx, a.job)
			case actComment:
				err = h.sl.SetComment(ctx, a.job, a.text)
			}
			if err != nil {
				h.log.Warn("slurm", "job", a.job, "action", a.kind.String(), "err", err)
			}
		}
	})
}

func (k actKind) String() string {
	switch k {
	case actHold:
		return "hold"
	case actAdmit:
		return "admit"
	case actRequeue:
		return "requeuehold"
	case actSignal:
		return "signal"
	case actCancel:
		return "cancel"
	case actKill:
		return "kill"
	case actComment:
		return "comment"
	}
	return fmt.Sprintf("actKind(%d)", uint8(k))
}
