package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// Observer receives what a run produces, for a metrics recorder or a log.
// The simulator calls it synchronously; an error stops the run.
type Observer interface {
	// Events receives the scheduler's events of one cycle, in order.
	Events(events []fleet.Event) error
	// Usage receives one usage sample of every running workload. The
	// slice is reused by the next call.
	Usage(now time.Time, usage []Usage) error
	// Snapshot receives the scheduler's snapshot once per sample period,
	// unless the observer is a FiguresObserver.
	Snapshot(s fleet.Snapshot) error
}

// FiguresObserver is an Observer that needs only the scheduler's
// aggregate figures: once per sample period the simulator calls its
// Figures with fleet.Scheduler.Figures, in place of Snapshot. A Snapshot
// copies every running and pending workload; the figures cost a fraction
// of that, and the run's decisions are the same either way.
type FiguresObserver interface {
	Observer
	// Figures receives the scheduler's figures once per sample period.
	Figures(f fleet.Figures) error
}

// Usage is one workload's measured use over the last sample period.
type Usage struct {
	Workload string     // the workload's ID
	Shape    gang.Shape // its shape
	GPUs     int        // its GPUs
	// SMActivity is the share of time its GPUs' SMs were busy (0-1).
	SMActivity float64
	// MFU is the model FLOPs utilisation: useful FLOPs over peak (0-1).
	MFU float64
}

type jobState uint8

const (
	jsPending jobState = iota + 1
	jsRunning
	jsDraining
	jsGone
)

// job is the host's record of one workload: what it must compute, what
// it has saved, and where it runs.
type job struct {
	w        gang.Workload
	gpus     int
	full     int   // GPUs at its full size (elastic batch may hold fewer)
	work     int64 // run time needed in total at full size (ns); 0 runs until stopped
	done     int64 // run time saved by checkpoints (ns)
	carry    int64 // run time made since the checkpoint before runStart (elastic.go)
	finishAt int64 // when the current finish event is due
	gen      int32 // run generation: events of earlier runs are stale
	state    jobState
	runStart int64 // when the current run starts making progress
	restart  bool  // the next run pays the restart overhead
	pods     []pod
	fail     bool // will not exit in time if drained
	deadline int64
	activity float64
	mfu      float64
	service  int // inference service, or -1
	trace    bool
	queue    int   // index in sim.queues
	reclaim  bool  // victims were drained to make room for it
	drainAt  int64 // when the first of them was drained
	live     int   // position in sim.live while it holds GPUs
	// split: a pod an elastic job gave up, draining; splitLost is its
	// share of the job's unsaved work, in GPU-ns.
	split     bool
	splitLost float64
	moving    bool  // drained by a defragmentation move, its new place reserved
	lostGPUs  int   // GPUs of pods lost with their node, waiting for a replacement
	lostAt    int64 // when the first of them was lost
}

type pod struct {
	node int32
	gpus int
}

// sim is one run's state.
type sim struct {
	cfg   Config
	s     *fleet.Scheduler
	rng   *rand.Rand
	q     agenda
	seq   uint64
	now   int64
	start time.Time
	err   error

	jobs []*job
	byID map[string]int32

	nodeName []string
	nodeIdx  map[string]int32
	nodeCap  []int
	nodeUsed []int
	nodeDown []bool
	nodeTop  []int32 // top-level domain (spine) of each node
	gpus     int

	topInference []int // scratch of inferenceByTop
	healthy      int

	infNominal, researchNominal int
	pools                       bool // the fleet is split into node pools
	services                    []service
	spikeGPUs                   float64
	training, batch             mix
	trainingRate                float64 // arrivals per ns
	trace                       int     // next trace job
	pendingResearch             int
	pendingBatch                int
	nextID                      int

	dirty        bool
	unsent       bool // a call since the last cycle that did not make it dirty (a checkpoint)
	lastSchedule int64
	skipped      int64 // when the last cycle skipped (skip) was due
	standing     bool  // the last cycle reported overflow in its events
	draining     []int32
	live         []int32 // jobs holding GPUs, in no particular order
	usage        []Usage

	// Allocated GPUs by shape and queue, and the rate of busy GPUs and
	// useful FLOP share of training and batch, kept current for advance.
	alloc         [4]int
	allocResearch int
	allocBatch    int
	busyRate      float64
	mfuRate       float64
	lastAdvance   int64

	// Allocation per queue (booked work apart) and its integrals, the
	// booked work's, the overflow the last cycle listed, and the
	// inference GPUs pending.
	queues       []QueueUse
	queueIdx     map[string]int
	queueAlloc   []int
	allocBooked  int
	overflowGPUs int
	pendingInf   int
	infCap       int

	res Result
}

// Run simulates cfg and returns its figures. The same Config gives the
// same Result, byte for byte.
func Run(cfg Config) (*Result, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	sched := c.From
	if sched == nil {
		if sched, err = fleet.New(c.Fleet); err != nil {
			return nil, err
		}
	}
	sm := &sim{cfg: c, s: sched, rng: rand.New(rand.NewPCG(c.Seed, 0x5ee7f1ee7)), start: c.Start,
		byID: map[string]int32{}, nodeIdx: map[string]int32{}, services: services(), queueIdx: map[string]int{}}
	sm.init()
	if c.From != nil {
		sm.carryOn()
	}
	sm.loop()
	if sm.err != nil {
		return nil, sm.err
	}
	sm.finish()
	return &sm.res, nil
}

func (sm *sim) init() {
	c := sm.cfg
	sm.skipped = -1
	tops := map[string]int32{}
	for i, n := range c.Fleet.Topology.Nodes {
		top := ""
		if len(n.Path) > 0 {
			top = n.Path[0]
		}
		if _, ok := tops[top]; !ok {
			tops[top] = int32(len(tops))
		}
		sm.nodeTop = append(sm.nodeTop, tops[top])
		sm.nodeName = append(sm.nodeName, n.Name)
		sm.nodeIdx[n.Name] = int32(i)
		sm.nodeCap = append(sm.nodeCap, n.GPUs)
		sm.pools = sm.pools || n.Pool == PoolInference
		sm.gpus += n.GPUs
	}
	sm.topInference = make([]int, len(tops))
	sm.healthy = sm.gpus
	sm.nodeUsed = make([]int, len(sm.nodeCap))
	sm.nodeDown = make([]bool, len(sm.nodeCap))
	quotas := c.Fleet.Quota
	if c.From != nil {
		quotas = c.From.Quota()
	}
	for _, n := range quotas.Nodes {
		if len(n.Quotas) == 0 {
			continue
		}
		switch n.Name {
		case QueueInference:
			sm.infNominal = int(n.Quotas[0].Nominal)
		case QueueResearch:
			sm.researchNominal = int(n.Quotas[0].Nominal)
		}
	}
	sm.infCap = c.InferenceCap
	if sm.infCap == 0 {
		sm.infCap = sm.infNominal
	}
	maxGang := traceMaxGang(sm.gpus)
	sm.training = newMix(trainingSizes(), maxGang)
	sm.batch = newMix(batchSizes(), min(64, maxGang))
	w := c.Workload
	meanRun := float64(w.TrainingMedian) * math.Exp(trainingSigma*trainingSigma/2)
	sm.trainingRate = w.TrainingLoad * float64(sm.gpus) / (sm.training.mean * meanRun)

	r := &sm.res
	r.Policy, r.GPUs, r.Seed, r.Start = c.Policy.String(), sm.gpus, c.Seed, c.Start
	r.InferenceNominal, r.ResearchNominal = sm.infNominal, sm.researchNominal
	r.waits = map[string][]float64{}

	sm.push(event{at: 0, kind: evTick})
	sm.push(event{at: 0, kind: evSample})
	if len(c.Trace) > 0 {
		sm.push(event{at: int64(c.Trace[0].Arrival), kind: evTrace})
	} else if sm.trainingRate > 0 {
		sm.push(event{at: sm.exp(sm.trainingRate), kind: evTraining})
	}
	for i, a := range c.Arrivals {
		sm.push(event{at: int64(max(0, a.At.Sub(c.Start))), kind: evArrival, job: int32(i)})
	}
	if w.SpikesPerDay > 0 {
		sm.push(event{at: sm.exp(w.SpikesPerDay / float64(24*time.Hour)), kind: evSpike})
	}
	if c.FailuresPerGPUDay > 0 {
		sm.push(event{at: sm.exp(sm.failRate()), kind: evNodeFail})
	}
}

func (sm *sim) failRate() float64 {
	return sm.cfg.FailuresPerGPUDay * float64(sm.gpus) / float64(24*time.Hour)
}

// exp draws an exponential gap for a Poisson process of rate per ns.
func (sm *sim) exp(rate float64) int64 { return int64(sm.rng.ExpFloat64() / rate) }

func (sm *sim) push(e event) {
	sm.seq++
	e.seq = sm.seq
	sm.q.push(e)
}

func (sm *sim) at(t int64) time.Time { return sm.start.Add(time.Duration(t)) }

func (sm *sim) fail(err error) {
	if sm.err == nil {
		sm.err = err
	}
}

func (sm *sim) loop() {
	end := int64(sm.cfg.Duration)
	day := int64(24 * time.Hour)
	nextDay := day
	for sm.q.len() > 0 && sm.err == nil {
		e := sm.q.pop()
		if e.at > end {
			break
		}
		sm.advance(e.at)
		sm.now = e.at
		sm.res.Events++
		if sm.cfg.Progress != nil && e.at >= nextDay {
			sm.cfg.Progress(sm.at(e.at), float64(e.at)/float64(end))
			nextDay += day
		}
		switch e.kind {
		case evTick:
			sm.tick()
		case evSample:
			sm.sample()
			sm.push(event{at: sm.now + int64(sm.cfg.Sample), kind: evSample})
		case evTraining:
			sm.arriveTraining()
			sm.push(event{at: sm.now + sm.exp(sm.trainingRate), kind: evTraining})
		case evTrace:
			sm.arriveTrace()
		case evSpike:
			sm.spike(e)
		case evFinish:
			if j := sm.jobs[e.job]; j.gen == e.gen && e.at == j.finishAt && (j.state == jsRunning || j.state == jsDraining) {
				sm.exit(e.job, gang.ExitFinished)
				j.state = jsGone
				sm.res.Completed[j.w.Shape]++
			}
		case evCheckpoint:
			sm.checkpoint(e)
		case evDrainExit:
			if j := sm.jobs[e.job]; j.gen == e.gen && j.state == jsDraining {
				sm.stopped(e.job, gang.ExitDrained)
			}
		case evNodeFail:
			sm.nodeFail()
			sm.push(event{at: sm.now + sm.exp(sm.failRate()), kind: evNodeFail})
		case evNodeRepair:
			sm.nodeRepair(e.job)
		case evArrival:
			w := sm.cfg.Arrivals[e.job].Workload
			sm.submit(sm.newJob(w, int64(w.ExpectedRuntime), -1))
		}
	}
	sm.advance(end)
	sm.now = end
}

// tick is one cycle period: the autoscaler on its period, then Schedule
// when anything changed, a drain deadline passed, work has waited a
// minute since the last cycle, or never. An inference scale-up is
// scheduled at once, in the same cycle as the batch top-up: one cycle
// serves both, and inference goes first by priority.
func (sm *sim) tick() {
	c := sm.cfg
	if sm.now%int64(c.Autoscale) == 0 {
		sm.autoscale()
		if len(c.Trace) == 0 {
			sm.topUpBatch()
		}
	}
	idle := sm.now-sm.lastSchedule >= int64(time.Minute) && sm.pendingResearch+sm.pendingBatch > 0
	switch due := sm.deadlineDue(); {
	case !sm.dirty && !due && idle && !sm.standing && sm.unchanged():
		sm.skip()
	case sm.dirty || idle || due:
		sm.schedule(true)
	}
	sm.push(event{at: sm.now + int64(c.Cycle), kind: evTick})
}

// unchanged reports whether a cycle now would decide nothing: nothing but
// checkpoints reached the scheduler since its last cycle, and no clock
// input of the cycle has turned since (fleet.Scheduler.NextChange).
func (sm *sim) unchanged() bool {
	now := sm.at(sm.now)
	next := sm.s.NextChange(now)
	return next.IsZero() || next.After(now)
}

// skip counts a cycle that would decide nothing without running it: the
// figures are those of a run that ran it. The events of the calls since
// reach the observer with the next cycle that runs, in the same order.
func (sm *sim) skip() {
	sm.lastSchedule = sm.now
	sm.skipped = sm.now
	sm.res.Cycles++
	sm.res.Skipped++
	if sm.cfg.Check {
		sm.check()
	}
}

func (sm *sim) deadlineDue() bool {
	keep := sm.draining[:0]
	due := false
	for _, i := range sm.draining {
		j := sm.jobs[i]
		if j.state != jsDraining {
			continue
		}
		keep = append(keep, i)
		if j.deadline <= sm.now {
			due = true
		}
	}
	sm.draining = keep
	return due
}

// schedule runs cycles and carries out their decisions in the order the
// scheduler demands: kills, drains, admissions. Kills free GPUs that
// beneficiaries wait for, so a cycle with kills is followed by another.
// A first cycle that does not count stands for one skipped at this
// instant, which counted already.
func (sm *sim) schedule(count bool) {
	now := sm.at(sm.now)
	for range 3 {
		d := sm.s.Schedule(now)
		sm.dirty, sm.unsent = false, false
		sm.lastSchedule = sm.now
		if count {
			sm.res.Cycles++
		}
		count = true
		sm.res.SchedulerEvents += len(d.Events)
		// A cycle listing overflow reports it in events too, every cycle:
		// while they are kept, the cycles that would repeat them run.
		sm.standing = len(d.Overflow) > 0 && len(d.Events) > 0
		sm.overflowGPUs = 0
		for _, o := range d.Overflow {
			sm.overflowGPUs += o.GPUs
		}
		if sm.cfg.Observer != nil {
			if err := sm.cfg.Observer.Events(d.Events); err != nil {
				sm.fail(err)
				return
			}
		}
		sm.hotSwaps(d)
		for _, k := range d.Kill {
			i, ok := sm.byID[k.ID]
			if !ok || (sm.jobs[i].state != jsDraining && sm.jobs[i].state != jsRunning) {
				sm.violate("kill of %q, which the host does not run", k.ID)
				continue
			}
			sm.res.Kills++
			sm.stopped(i, gang.ExitKilled)
		}
		// A workload may be admitted and drained in one cycle (into a
		// booked block whose booking then asks for the room): it is
		// started first, then drained.
		late := d.Drain[:0:0]
		for _, dr := range d.Drain {
			if dr.Of != "" {
				sm.shrink(dr)
				continue
			}
			if slices.ContainsFunc(d.Admit, func(a fleet.Admission) bool { return a.ID == dr.ID }) {
				late = append(late, dr)
				continue
			}
			sm.drain(dr)
		}
		for _, a := range d.Admit {
			sm.admit(a)
		}
		// A workload admitted below its size may grow in the same cycle.
		for _, g := range d.Grow {
			sm.grow(g)
		}
		for _, dr := range late {
			sm.drain(dr)
		}
		if sm.cfg.Check {
			sm.check()
		}
		if len(d.Kill) == 0 || sm.err != nil {
			return
		}
	}
}

func (sm *sim) violate(format string, args ...any) {
	if len(sm.res.Violations) < 100 {
		sm.res.Violations = append(sm.res.Violations, sm.at(sm.now).Format(time.DateTime)+": "+fmt.Sprintf(format, args...))
	}
}

// submit hands a job to the scheduler.
func (sm *sim) submit(i int32) {
	j := sm.jobs[i]
	if err := sm.s.Submit(sm.at(sm.now), j.w); err != nil {
		sm.fail(err)
		return
	}
	j.state = jsPending
	sm.dirty = true
	sm.pendingDelta(j, 1)
}

func (sm *sim) pendingDelta(j *job, d int) {
	if j.w.Shape == gang.Inference {
		sm.pendingInf += d * j.gpus
	}
	switch j.w.Queue {
	case QueueResearch:
		sm.pendingResearch += d
	case QueueBatch:
		sm.pendingBatch += d
	}
}

func (sm *sim) newJob(w gang.Workload, work int64, service int) int32 {
	sm.survives(&w)
	if sm.pools {
		w.Pools = []string{PoolTraining}
		if w.Shape == gang.Inference {
			w.Pools = []string{PoolInference}
		}
	}
	q, ok := sm.queueIdx[w.Queue]
	if !ok {
		if sm.queueIdx == nil {
			sm.queueIdx = map[string]int{}
		}
		q = len(sm.queues)
		sm.queueIdx[w.Queue] = q
		sm.queues = append(sm.queues, QueueUse{Queue: w.Queue})
		sm.queueAlloc = append(sm.queueAlloc, 0)
	}
	sm.queues[q].Inference = sm.queues[q].Inference || w.Shape == gang.Inference
	i := int32(len(sm.jobs))
	sm.jobs = append(sm.jobs, &job{w: w, gpus: w.GPUs(), full: w.GPUs(), work: work, service: service, queue: q})
	sm.byID[w.ID] = i
	return i
}

func (sm *sim) id(prefix string) string {
	sm.nextID++
	return prefix + "-" + strconv.Itoa(sm.nextID)
}

// admit starts an admitted workload on its nodes.
func (sm *sim) admit(a fleet.Admission) {
	i, ok := sm.byID[a.ID]
	if !ok || sm.jobs[i].state != jsPending {
		sm.violate("admission of %q, which is not pending", a.ID)
		return
	}
	j := sm.jobs[i]
	sm.pendingDelta(j, -1)
	j.state, j.pods = jsRunning, j.pods[:0]
	gpus := 0
	for _, p := range a.Pods {
		n, ok := sm.nodeIdx[p.Node]
		if !ok {
			sm.violate("%q admitted on unknown node %q", a.ID, p.Node)
			continue
		}
		if sm.nodeDown[n] {
			sm.violate("%q admitted on down node %q", a.ID, p.Node)
		}
		sm.nodeUsed[n] += p.GPUs
		if sm.nodeUsed[n] > sm.nodeCap[n] {
			sm.violate("node %q double-booked: %d of %d GPUs after admitting %q", p.Node, sm.nodeUsed[n], sm.nodeCap[n], a.ID)
		}
		j.pods = append(j.pods, pod{node: n, gpus: p.GPUs})
		gpus += p.GPUs
	}
	if gpus != j.full && (!elastic(j.w) || gpus > j.full) {
		sm.violate("%q admitted with %d GPUs, wants %d", a.ID, gpus, j.full)
	}
	j.gpus, j.carry = gpus, 0 // an elastic job may start smaller
	if j.w.Booking == "" {
		sm.res.wait(a.Queue, a.Wait)
	}
	if j.w.Shape == gang.Inference {
		sm.res.inferenceWait(time.Duration(sm.now), a.Wait, j.reclaim, time.Duration(sm.now-j.drainAt))
		j.reclaim = false
	}
	j.runStart = sm.now
	if j.restart {
		j.runStart += int64(sm.cfg.RestartOverhead)
	}
	sm.running(i, j)
}

// running counts job i as running from j.runStart with j.done of its work
// behind it: its use is drawn, and its finish and first checkpoint are
// scheduled.
func (sm *sim) running(i int32, j *job) {
	switch j.w.Shape {
	case gang.Training:
		j.activity = 0.80 + 0.15*sm.rng.Float64()
		j.mfu = 0.35 + 0.10*sm.rng.Float64()
	case gang.Batch:
		j.activity = 0.60 + 0.30*sm.rng.Float64()
		j.mfu = 0.45 * j.activity
	}
	sm.account(j, 1)
	j.live = len(sm.live)
	sm.live = append(sm.live, i)
	if j.work > 0 {
		sm.scheduleFinish(i, j)
		if j.w.Drain.CheckpointInterval > 0 {
			sm.push(event{at: j.runStart + int64(j.w.Drain.CheckpointInterval), kind: evCheckpoint, job: i, gen: j.gen})
		}
	}
}

// account adds (sign 1) or removes (-1) a running job from the counters.
func (sm *sim) account(j *job, sign int) {
	g := sign * j.gpus
	if j.w.Booking != "" {
		sm.allocBooked += g
	} else {
		sm.queueAlloc[j.queue] += g
	}
	sm.alloc[j.w.Shape] += g
	switch j.w.Queue {
	case QueueResearch:
		sm.allocResearch += g
	case QueueBatch:
		sm.allocBatch += g
	}
	sm.busyRate += float64(g) * j.activity
	sm.mfuRate += float64(g) * j.mfu
}

// progress is the run time a running job has done at t.
func (sm *sim) progress(j *job) int64 {
	p := j.done + j.carry + j.pace(max(0, sm.now-j.runStart))
	if j.work > 0 {
		p = min(p, j.work)
	}
	return p
}

func (sm *sim) checkpoint(e event) {
	j := sm.jobs[e.job]
	if j.gen != e.gen || (j.state != jsRunning && j.state != jsDraining) {
		return
	}
	// The saved work includes the run time so far, so the run restarts
	// counting from now: progress is done plus run time since runStart.
	j.done, j.carry = sm.progress(j), 0
	j.runStart = max(j.runStart, sm.now)
	sm.unsent = true
	if err := sm.s.Checkpointed(sm.at(sm.now), j.w.ID, sm.at(sm.now)); err != nil {
		sm.fail(err)
		return
	}
	sm.res.Checkpoints++
	sm.push(event{at: sm.now + int64(j.w.Drain.CheckpointInterval), kind: evCheckpoint, job: e.job, gen: j.gen})
}

// drain sends SIGTERM to a victim: it checkpoints and exits within the
// drain time, or, for a configured share, hangs until killed.
func (sm *sim) drain(d fleet.Drain) {
	i, ok := sm.byID[d.ID]
	if !ok || sm.jobs[i].state != jsRunning {
		sm.violate("drain of %q, which is not running", d.ID)
		return
	}
	j := sm.jobs[i]
	j.state, j.deadline = jsDraining, int64(d.Deadline.Sub(sm.start))
	sm.draining = append(sm.draining, i)
	sm.res.Drains++
	j.moving = len(d.MoveTo) > 0
	if d.Reason == gang.DrainDefrag {
		sm.res.Moves++
	}
	for _, id := range d.Beneficiaries {
		if b, ok := sm.byID[id]; ok && sm.jobs[b].w.Shape == gang.Inference {
			if !sm.jobs[b].reclaim {
				sm.res.InferenceReclaims++
				sm.jobs[b].drainAt = sm.now
			}
			sm.jobs[b].reclaim = true
		}
	}
	j.fail = sm.rng.Float64() < sm.cfg.DrainFailShare
	if j.fail {
		return
	}
	c := sm.cfg
	t := int64(c.DrainMin) + int64(sm.rng.Float64()*float64(c.DrainMax-c.DrainMin))
	sm.push(event{at: sm.now + t, kind: evDrainExit, job: i, gen: j.gen})
}

// stopped ends a preempted run (drained or killed) and requeues the job
// with its remaining work. A drained training job saves its state on
// SIGTERM; batch keeps only its latest periodic checkpoint; a job that
// never checkpoints loses its whole run; a killed job loses everything
// since its latest checkpoint.
func (sm *sim) stopped(i int32, how gang.ExitReason) {
	j := sm.jobs[i]
	if j.split {
		// Its job runs on: only the pod's unsaved work is lost.
		sm.splitGone(i, how, &sm.res.PreemptedLostGPUh)
		return
	}
	var lost int64
	switch {
	case j.w.Drain.CheckpointInterval == 0:
		lost, j.done = sm.progress(j), 0
	case how == gang.ExitDrained && j.w.Shape == gang.Training:
		j.done, j.carry = sm.progress(j), 0
		sm.unsent = true
		if err := sm.s.Checkpointed(sm.at(sm.now), j.w.ID, sm.at(sm.now)); err != nil {
			sm.fail(err)
			return
		}
	default:
		lost = sm.progress(j) - j.done
	}
	sm.res.PreemptedLostGPUh += float64(lost) * float64(j.full) / float64(time.Hour)
	sm.res.RestartGPUh += float64(sm.cfg.RestartOverhead) * float64(j.gpus) / float64(time.Hour)
	if j.moving {
		sm.res.MoveLostGPUh += float64(lost+int64(sm.cfg.RestartOverhead)) * float64(j.gpus) / float64(time.Hour)
	}
	sm.exit(i, how)
	sm.requeue(i)
}

// exit reports an exit to the scheduler and frees the job's GPUs.
func (sm *sim) exit(i int32, how gang.ExitReason) {
	j := sm.jobs[i]
	if err := sm.s.Exited(sm.at(sm.now), j.w.ID, how); err != nil {
		sm.fail(err)
		return
	}
	sm.release(j)
}

func (sm *sim) release(j *job) {
	for _, p := range j.pods {
		sm.nodeUsed[p.node] -= p.gpus
		if sm.nodeUsed[p.node] < 0 {
			sm.violate("node %q released below zero by %q", sm.nodeName[p.node], j.w.ID)
		}
	}
	j.pods, j.lostGPUs = j.pods[:0], 0
	sm.account(j, -1)
	last := sm.live[len(sm.live)-1]
	sm.live[j.live] = last
	sm.jobs[last].live = j.live
	sm.live = sm.live[:len(sm.live)-1]
	j.activity, j.mfu = 0, 0
	sm.dirty = true
}

// requeue submits a stopped job again with the work it has left; it pays
// the restart overhead when it runs again.
func (sm *sim) requeue(i int32) {
	j := sm.jobs[i]
	j.gen++
	j.restart = true
	j.carry = 0
	if j.gpus != j.full {
		j.gpus = j.full // queued again at its full size
	}
	j.w.Drain.LastCheckpoint = time.Time{}
	if j.work > 0 {
		j.w.ExpectedRuntime = time.Duration(j.work-j.done) + sm.cfg.RestartOverhead
	}
	sm.res.Requeues++
	// A mover whose new place is still reserved is pending again in the
	// scheduler, which admits it there: it is not submitted again.
	if j.moving {
		j.moving = false
		if _, err := sm.s.Explain(j.w.ID); err == nil {
			j.state = jsPending
			sm.dirty = true
			sm.pendingDelta(j, 1)
			return
		}
	}
	sm.submit(i)
}

// demand is the inference demand now, in GPUs, capped at its guarantee.
func (sm *sim) demand() float64 {
	w := sm.cfg.Workload
	g := float64(sm.gpus)
	d := g * (w.InferenceTrough + (w.InferencePeak-w.InferenceTrough)*diurnal(sm.hour(), w.TroughHours))
	return min(d+sm.spikeGPUs, float64(sm.infCap))
}

// hour is the hour of the day now (UTC), which the demand curve follows.
func (sm *sim) hour() float64 {
	t := sm.at(sm.now).UTC()
	midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return float64(t.Sub(midnight)) / float64(time.Hour)
}

// autoscale sets every inference service's replica count to its share
// of the demand: scale-up submits replicas, scale-down withdraws the
// newest (a pending one is cancelled, a running one stops).
func (sm *sim) autoscale() {
	d := sm.demand()
	for si := range sm.services {
		sv := &sm.services[si]
		target := int(math.Ceil(d * sv.share / float64(sv.tp)))
		for len(sv.replicas) < target {
			sv.next++
			w := inferenceWorkload(sv.name+"-"+strconv.Itoa(sv.next), sv.tp)
			i := sm.newJob(w, 0, si)
			sv.replicas = append(sv.replicas, i)
			sm.submit(i)
			sm.res.ScaleUps++
		}
		for len(sv.replicas) > target {
			k := sm.scaleDownVictim(sv)
			i := sv.replicas[k]
			sv.replicas = slices.Delete(sv.replicas, k, k+1)
			j := sm.jobs[i]
			switch j.state {
			case jsPending:
				if err := sm.s.Cancel(sm.at(sm.now), j.w.ID); err != nil {
					sm.fail(err)
				}
				sm.pendingDelta(j, -1)
				sm.dirty = true
			case jsRunning, jsDraining:
				sm.exit(i, gang.ExitFinished)
			}
			j.state = jsGone
			delete(sm.byID, j.w.ID)
			sm.res.ScaleDowns++
		}
	}
}

// scaleDownVictim is the position in sv.replicas of the replica a
// scale-down stops (see ScaleDown).
func (sm *sim) scaleDownVictim(sv *service) int {
	last := len(sv.replicas) - 1
	if sm.cfg.Workload.ScaleDown == ScaleDownNewest {
		return last
	}
	for k := last; k >= 0; k-- {
		if sm.jobs[sv.replicas[k]].state == jsPending {
			return k
		}
	}
	per := sm.inferenceByTop()
	best, bestGPUs := last, math.MaxInt
	for k := last; k >= 0; k-- {
		j := sm.jobs[sv.replicas[k]]
		if len(j.pods) == 0 {
			continue
		}
		if g := per[sm.nodeTop[j.pods[0].node]]; g < bestGPUs {
			best, bestGPUs = k, g
		}
	}
	return best
}

// inferenceByTop counts the inference GPUs running in each top-level
// domain, in a buffer reused from call to call.
func (sm *sim) inferenceByTop() []int {
	clear(sm.topInference)
	for _, i := range sm.live {
		j := sm.jobs[i]
		if j.w.Shape != gang.Inference {
			continue
		}
		for _, p := range j.pods {
			sm.topInference[sm.nodeTop[p.node]] += p.gpus
		}
	}
	return sm.topInference
}

func (sm *sim) spike(e event) {
	w := sm.cfg.Workload
	if e.job < 0 {
		sm.spikeGPUs -= float64(e.gen)
		return
	}
	size := int32(math.Round(w.SpikeSize * float64(sm.gpus) * (0.5 + sm.rng.Float64())))
	sm.spikeGPUs += float64(size)
	sm.res.Spikes++
	length := int64(float64(w.SpikeLength) * (0.5 + sm.rng.Float64()))
	sm.push(event{at: sm.now + length, kind: evSpike, job: -1, gen: size})
	sm.push(event{at: sm.now + sm.exp(w.SpikesPerDay/float64(24*time.Hour)), kind: evSpike})
}

func (sm *sim) arriveTraining() {
	w := sm.cfg.Workload
	if sm.pendingResearch >= w.TrainingBacklog {
		sm.res.TurnedAway++
		return
	}
	gpus := sm.training.draw(sm.rng)
	run := lognormal(sm.rng, w.TrainingMedian, trainingSigma, 20*time.Minute, 72*time.Hour)
	i := sm.newJob(trainingWorkload(sm.id("train"), gpus, run, sm.cfg.Checkpoint), int64(run), -1)
	sm.submit(i)
}

// batchCheckpoint is the checkpoint interval of batch jobs, 0 for none.
func (sm *sim) batchCheckpoint() time.Duration { return max(0, sm.cfg.BatchCheckpoint) }

func (sm *sim) topUpBatch() {
	w := sm.cfg.Workload
	for sm.pendingBatch < w.BatchBacklog && sm.err == nil {
		gpus := sm.batch.draw(sm.rng)
		run := lognormal(sm.rng, w.BatchMedian, batchSigma, 5*time.Minute, 8*time.Hour)
		i := sm.newJob(sm.batchJob(batchWorkload(sm.id("batch"), gpus, run, sm.batchCheckpoint())), int64(run), -1)
		sm.submit(i)
	}
}

// arriveTrace submits the next trace job: gangs of 8 GPUs or more as
// research training in whole nodes, smaller jobs as batch.
func (sm *sim) arriveTrace() {
	c := sm.cfg
	tj := c.Trace[sm.trace]
	sm.trace++
	if sm.trace < len(c.Trace) {
		sm.push(event{at: int64(c.Trace[sm.trace].Arrival), kind: evTrace})
	}
	gpus, run := traceShape(tj, traceMaxGang(sm.gpus))
	var w gang.Workload
	if tj.GPUs >= 8 {
		if sm.pendingResearch >= c.Workload.TrainingBacklog {
			sm.res.TurnedAway++
			return
		}
		w = trainingWorkload(sm.id("philly-"+tj.Team), gpus, run, c.Checkpoint)
	} else {
		if sm.pendingBatch >= c.Workload.BatchBacklog*8 {
			sm.res.TurnedAway++
			return
		}
		w = sm.batchJob(batchWorkload(sm.id("philly-"+tj.Team), gpus, run, sm.batchCheckpoint()))
	}
	i := sm.newJob(w, int64(run), -1)
	sm.jobs[i].trace = true
	sm.submit(i)
}

// nodeFail takes a random node down: every workload on it fails as a
// whole and is requeued (an inference replica is replaced at once).
func (sm *sim) nodeFail() { sm.failNode(int32(sm.rng.IntN(len(sm.nodeCap)))) }

// failNode takes node n down, if it is up.
func (sm *sim) failNode(n int32) {
	if sm.nodeDown[n] {
		return
	}
	affected, err := sm.s.SetNodeHealth(sm.at(sm.now), sm.nodeName[n], topology.Down)
	if err != nil {
		sm.fail(err)
		return
	}
	sm.nodeDown[n] = true
	sm.healthy -= sm.nodeCap[n]
	sm.dirty = true
	sm.res.NodeFailures++
	for _, id := range affected {
		i, ok := sm.byID[id]
		if !ok {
			sm.violate("node failure hit %q, which the host does not know", id)
			continue
		}
		j := sm.jobs[i]
		if j.split {
			lost := 0.0
			sm.release(j)
			sm.splitGoneLost(i, &lost)
			sm.res.FailureLostGPUh += lost
			sm.res.FailedRuns++
			continue
		}
		// A stateless inference replica loses no work, only its restart
		// and warm-up; other work loses what it has not saved.
		lost := sm.progress(j) - j.done
		restart := sm.cfg.RestartOverhead
		switch {
		case j.w.Shape == gang.Inference:
			lost, restart = 0, restart+sm.cfg.ReplicaWarmup
		case j.w.Drain.CheckpointInterval == 0:
			lost, j.done = sm.progress(j), 0
		}
		sm.res.FailureLostGPUh += float64(lost) * float64(j.full) / float64(time.Hour)
		sm.res.FailureRestartGPUh += float64(restart) * float64(j.gpus) / float64(time.Hour)
		sm.res.FailedRuns++
		sm.release(j)
		sm.requeue(i)
	}
	sm.losePods(n)
	if sm.nodeUsed[n] != 0 {
		sm.violate("node %q down with %d GPUs still booked", sm.nodeName[n], sm.nodeUsed[n])
	}
	c := sm.cfg
	rep := int64(c.RepairMin) + int64(sm.rng.Float64()*float64(c.RepairMax-c.RepairMin))
	sm.push(event{at: sm.now + rep, kind: evNodeRepair, job: n})
}

func (sm *sim) nodeRepair(n int32) {
	if _, err := sm.s.SetNodeHealth(sm.at(sm.now), sm.nodeName[n], topology.Healthy); err != nil {
		sm.fail(err)
		return
	}
	sm.nodeDown[n] = false
	sm.healthy += sm.nodeCap[n]
	sm.dirty = true
}

// inferenceActivity is the SM activity of inference replicas now: 0.3 at
// the trough to 0.7 at the peak, following load.
func (sm *sim) inferenceActivity() float64 {
	w := sm.cfg.Workload
	return 0.3 + 0.4*diurnal(sm.hour(), w.TroughHours)
}

// advance integrates the GPU-time counters up to t.
func (sm *sim) advance(t int64) {
	dt := float64(t-sm.lastAdvance) / float64(time.Hour)
	if dt <= 0 {
		return
	}
	r := &sm.res
	sm.lastAdvance = t
	inf := float64(sm.alloc[gang.Inference])
	r.InferenceGPUh += inf * dt
	r.TrainingGPUh += float64(sm.alloc[gang.Training]) * dt
	r.BatchGPUh += float64(sm.alloc[gang.Batch]) * dt
	trainingShare := sm.gpus - sm.infNominal
	r.BorrowedGPUh += float64(max(0, sm.allocResearch+sm.allocBatch-trainingShare)) * dt
	r.ReservedIdleGPUh += float64(max(0, sm.infNominal-sm.alloc[gang.Inference])) * dt
	used := sm.alloc[gang.Inference] + sm.alloc[gang.Training] + sm.alloc[gang.Batch]
	r.IdleGPUh += float64(max(0, sm.healthy-used)) * dt
	r.DownGPUh += float64(sm.gpus-sm.healthy) * dt
	act := sm.inferenceActivity()
	r.BusyGPUh += (inf*act + sm.busyRate) * dt
	r.UsefulGPUh += (inf*0.3*act + sm.mfuRate) * dt
	r.Hours += dt
	r.BookedGPUh += float64(sm.allocBooked) * dt
	r.OverflowGPUh += float64(sm.overflowGPUs) * dt
	r.UnservedGPUh += float64(sm.pendingInf) * dt
	offPeak := diurnal(sm.hour(), sm.cfg.Workload.TroughHours) == 0
	for q, a := range sm.queueAlloc {
		sm.queues[q].GPUh += float64(a) * dt
		if offPeak {
			sm.queues[q].OffPeakGPUh += float64(a) * dt
		}
	}
}

// sample records a point of the series, the stranded GPUs, and feeds the
// observer one usage sample per running workload.
func (sm *sim) sample() {
	// A cycle first, so every event before now reaches the observer
	// before the sample does; it runs with or without an observer, so
	// observing a run does not change it. When a cycle already ran at
	// this instant and nothing reached the scheduler since, that cycle
	// serves.
	switch {
	case sm.lastSchedule != sm.now || sm.dirty:
		sm.schedule(true)
	case sm.unsent || sm.skipped == sm.now:
		// The events of checkpoints since reach the observer first, and
		// the figures and snapshot are those at now; when the cycle at
		// this instant was skipped, this one stands for it.
		sm.schedule(sm.skipped != sm.now)
	}
	if sm.err != nil {
		return
	}
	stranded := 0
	for n, used := range sm.nodeUsed {
		if !sm.nodeDown[n] && used > 0 && used < sm.nodeCap[n] {
			stranded += sm.nodeCap[n] - used
		}
	}
	used := sm.alloc[gang.Inference] + sm.alloc[gang.Training] + sm.alloc[gang.Batch]
	trainingShare := sm.gpus - sm.infNominal
	borrowed := max(0, sm.allocResearch+sm.allocBatch-trainingShare)
	sm.res.Series = append(sm.res.Series, Point{
		At: time.Duration(sm.now), Demand: int(math.Round(sm.demand())),
		Inference: sm.alloc[gang.Inference], Training: sm.alloc[gang.Training], Batch: sm.alloc[gang.Batch],
		Borrowed: borrowed, Idle: max(0, sm.healthy-used), Stranded: stranded, Down: sm.gpus - sm.healthy,
		PendingResearch: sm.pendingResearch, PendingBatch: sm.pendingBatch,
	})
	if sm.cfg.Observer == nil {
		return
	}
	var err error
	if fo, ok := sm.cfg.Observer.(FiguresObserver); ok {
		err = fo.Figures(sm.s.Figures())
	} else {
		err = sm.cfg.Observer.Snapshot(sm.s.Snapshot())
	}
	if err != nil {
		sm.fail(err)
		return
	}
	sm.usage = sm.usage[:0]
	act := sm.inferenceActivity()
	for _, i := range sm.live {
		j := sm.jobs[i]
		u := Usage{Workload: j.w.ID, Shape: j.w.Shape, GPUs: j.gpus, SMActivity: j.activity, MFU: j.mfu}
		if j.w.Shape == gang.Inference {
			u.SMActivity, u.MFU = act, 0.3*act
		}
		sm.usage = append(sm.usage, u)
	}
	if err := sm.cfg.Observer.Usage(sm.at(sm.now), sm.usage); err != nil {
		sm.fail(err)
	}
}

// check compares the scheduler's snapshot with the host's own view:
// free + allocated + nominated = healthy capacity, the same GPUs per
// node, and no node above its capacity; and the scheduler's Figures with
// the snapshot's.
func (sm *sim) check() {
	snap := sm.s.Snapshot()
	if got, want := sm.s.Figures(), snap.Figures(); !reflect.DeepEqual(got, want) {
		sm.violate("scheduler's Figures %+v differ from its snapshot's %+v", got, want)
	}
	f := snap.Fleet
	running := 0
	perNode := make([]int, len(sm.nodeCap))
	for _, r := range snap.Running {
		// A gang waiting for a replacement node holds fewer GPUs than it asks.
		for _, ng := range r.Nodes {
			running += ng.GPUs
			perNode[sm.nodeIdx[ng.Node]] += ng.GPUs
		}
	}
	if f.FreeGPUs+running+snap.Nominated != f.HealthyGPUs {
		sm.violate("free %d + running %d + nominated %d != healthy capacity %d", f.FreeGPUs, running, snap.Nominated, f.HealthyGPUs)
	}
	if f.AllocatedGPUs != running+snap.Nominated {
		sm.violate("allocated %d != running %d + nominated %d", f.AllocatedGPUs, running, snap.Nominated)
	}
	if f.HealthyGPUs != sm.healthy {
		sm.violate("scheduler sees %d healthy GPUs, host %d", f.HealthyGPUs, sm.healthy)
	}
	for n, g := range perNode {
		if g != sm.nodeUsed[n] {
			sm.violate("node %q: scheduler places %d GPUs, host runs %d", sm.nodeName[n], g, sm.nodeUsed[n])
		}
	}
}

// finish flushes the scheduler's last events and sorts the figures.
func (sm *sim) finish() {
	d := sm.s.Schedule(sm.at(sm.now))
	sm.res.SchedulerEvents += len(d.Events)
	if sm.cfg.Observer != nil {
		if err := sm.cfg.Observer.Events(d.Events); err != nil {
			sm.fail(err)
		}
	}
	sm.res.Queues = slices.Clone(sm.queues)
	sm.res.Scheduler = sm.s
	sm.res.settle()
}
