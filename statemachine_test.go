package fleet_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// smallConfig is a 64-GPU fleet (2 spines x 2 leaves x 2 nodes x 8 GPUs)
// with the reference quota shape scaled down.
func smallConfig() fleet.Config {
	cfg := fleet.ReferenceConfig()
	cfg.Topology = topology.Uniform(topology.UniformSpec{Levels: []string{"spine", "leaf", "node"},
		Fanout: []int{2, 2, 2}, GPUsPerNode: 8, Flavor: "H100"})
	cfg.Quota.Nodes[1].Quotas = []quota.FlavorQuota{{Flavor: "H100", Nominal: 32, LendingLimit: quota.LimitOf(24)}}
	cfg.Quota.Nodes[2].Quotas = []quota.FlavorQuota{{Flavor: "H100", Nominal: 32}}
	return cfg
}

// host is the test's model of a host: what it started, what it was told
// to drain, and the specs to adopt after a restart.
type host struct {
	specs    map[string]gang.Workload
	running  map[string]fleet.Admission
	started  map[string]time.Time
	draining map[string]bool // told to drain, not yet exited
	moving   map[string]bool // told to drain with a new place reserved
}

type machine struct {
	s, twin *fleet.Scheduler
	h       host
	now     time.Time
	n       int
	nodes   []string
	// cfg is the Config m.s was built with: a restore from its snapshot
	// passes the same one (Restore refuses a changed quota).
	cfg fleet.Config
	// eventsDiffer: the scheduler was rebuilt by adoption since the last
	// cycle, so the next cycle's events (the calls that rebuilt it, the
	// events the twin had not delivered yet) differ from the twin's.
	eventsDiffer bool
	// last is the last cycle's Decisions, which a cycle before
	// NextChange repeats (QuietSchedule).
	last fleet.Decisions
}

func (m *machine) init(t *rapid.T) {
	cfg := machineConfig()
	m.cfg = cfg
	var err error
	m.s, err = fleet.New(cfg)
	require.NoError(t, err)
	m.twin, err = fleet.New(cfg)
	require.NoError(t, err)
	m.h = host{specs: map[string]gang.Workload{}, running: map[string]fleet.Admission{}, started: map[string]time.Time{}, draining: map[string]bool{}, moving: map[string]bool{}}
	m.now = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range cfg.Topology.Nodes {
		m.nodes = append(m.nodes, n.Name)
	}
}

// both applies a call to the scheduler and its twin and requires the same
// outcome, which pins determinism.
func both[T any](t *rapid.T, m *machine, call func(*fleet.Scheduler) (T, error)) (T, error) {
	a, errA := call(m.s)
	b, errB := call(m.twin)
	require.Equal(t, errA == nil, errB == nil)
	require.Equal(t, a, b, "twin schedulers diverged")
	return a, errA
}

func (m *machine) Submit(t *rapid.T) {
	m.n++
	queue := rapid.SampledFrom([]string{"prod-inference", "research", "batch"}).Draw(t, "queue")
	class := map[string]string{"prod-inference": fleet.ClassProdInference, "research": fleet.ClassReservedResearch, "batch": fleet.ClassPreemptibleBatch}[queue]
	w := gang.Workload{ID: fmt.Sprintf("w%d", m.n), Queue: queue, PriorityClass: class, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "p", Count: rapid.IntRange(1, 4).Draw(t, "count"), GPUsPerPod: rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "gpus")}},
		Drain: gang.DrainContract{Preemptible: queue != "prod-inference", SurvivesNodeLoss: rapid.Bool().Draw(t, "survives"),
			CheckpointInterval: time.Duration(rapid.IntRange(0, 1).Draw(t, "checkpoints")) * 10 * time.Minute}}
	if rapid.Bool().Draw(t, "topo") {
		w.Topology.Required = rapid.SampledFrom([]string{"spine", "leaf"}).Draw(t, "required")
	}
	ps := &w.PodSets[0]
	if queue == "batch" && rapid.IntRange(0, 3).Draw(t, "elastic") > 0 {
		// Elastic batch: more pods, any minimum.
		ps.Count = rapid.IntRange(2, 8).Draw(t, "elasticCount")
		ps.MinCount = rapid.IntRange(1, ps.Count).Draw(t, "min")
	} else {
		// A quarter of the rest shares GPUs, takes MIG slices or runs on
		// cores only, with or without cores beside its GPUs.
		switch rapid.IntRange(0, 7).Draw(t, "sharing") {
		case 0:
			ps.GPUsPerPod, ps.GPUShare = 0, rapid.SampledFrom([]int{250, 500, 1000}).Draw(t, "share")
		case 1:
			ps.GPUsPerPod, ps.MIG = 0, rapid.SampledFrom([]string{"1g.10gb", "3g.40gb", "7g.80gb"}).Draw(t, "mig")
		case 2:
			ps.GPUsPerPod = 0
			ps.Resources = []gang.Resource{{Name: "cpu", Amount: int64(rapid.IntRange(1, 16).Draw(t, "cores")) * 1000}}
		case 3:
			ps.Resources = []gang.Resource{{Name: "cpu", Amount: int64(rapid.IntRange(1, 4).Draw(t, "cores")) * 1000}}
		}
	}
	if queue == "research" && rapid.IntRange(0, 3).Draw(t, "launcher") == 0 {
		// A launcher on cores only beside the workers: its cores may take
		// another flavor of research's cpu group than theirs.
		cores := int64(rapid.IntRange(1, 48).Draw(t, "launcherCores")) * 1000
		w.PodSets = append([]gang.PodSet{{Name: "launcher", Count: 1, Resources: []gang.Resource{{Name: "cpu", Amount: cores}}}}, w.PodSets...)
	}
	w.Model = rapid.SampledFrom([]string{"", "", "llama", "qwen"}).Draw(t, "model")
	_, err := both(t, m, func(s *fleet.Scheduler) (struct{}, error) { return struct{}{}, s.Submit(m.now, w) })
	if err == nil {
		m.h.specs[w.ID] = w
	}
}

// SubmitElastic submits elastic batch work: pods of 2-8 GPUs that run at
// any size from their minimum, shrink for others and grow back.
func (m *machine) SubmitElastic(t *rapid.T) {
	m.n++
	count := rapid.IntRange(4, 16).Draw(t, "elasticCount")
	w := gang.Workload{ID: fmt.Sprintf("w%d", m.n), Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
		PodSets: []gang.PodSet{{Name: "p", Count: count, MinCount: rapid.IntRange(1, count).Draw(t, "min"),
			GPUsPerPod: rapid.SampledFrom([]int{2, 4, 8}).Draw(t, "gpus")}},
		Drain: gang.DrainContract{Preemptible: true}}
	if rapid.IntRange(0, 3).Draw(t, "topo") == 0 {
		w.Topology.Required = "spine"
	}
	_, err := both(t, m, func(s *fleet.Scheduler) (struct{}, error) { return struct{}{}, s.Submit(m.now, w) })
	if err == nil {
		m.h.specs[w.ID] = w
	}
}

// Spike submits several inference replicas at once: inference takes
// back what it lends, from elastic batch pod by pod.
func (m *machine) Spike(t *rapid.T) {
	for range rapid.IntRange(2, 4).Draw(t, "replicas") {
		m.n++
		w := gang.Workload{ID: fmt.Sprintf("w%d", m.n), Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
			PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: rapid.SampledFrom([]int{4, 8}).Draw(t, "gpus")}}}
		_, err := both(t, m, func(s *fleet.Scheduler) (struct{}, error) { return struct{}{}, s.Submit(m.now, w) })
		if err == nil {
			m.h.specs[w.ID] = w
		}
	}
}

func (m *machine) Schedule(t *rapid.T) {
	m.now = m.now.Add(time.Duration(rapid.IntRange(1, 300).Draw(t, "dt")) * time.Second)
	d, _ := both(t, m, func(s *fleet.Scheduler) (fleet.Decisions, error) {
		d := s.Schedule(m.now)
		if m.eventsDiffer {
			d.Events, d.EventsDropped = nil, 0
		}
		return d, nil
	})
	m.eventsDiffer = false
	m.last = d
	m.checkGuarantee(t, d)
	m.checkExplain(t)
	for _, a := range d.Admit {
		_, dup := m.h.running[a.ID]
		require.False(t, dup, "admitted twice: %s", a.ID)
		m.h.running[a.ID] = a
		m.h.started[a.ID] = m.now
	}
	for _, id := range d.Failed {
		delete(m.h.running, id)
		delete(m.h.specs, id)
		delete(m.h.draining, id)
	}
	for _, x := range d.Replace {
		a, ok := m.h.running[x.ID]
		require.True(t, ok, "replacement for %s, which does not run", x.ID)
		a.Pods = slices.Clone(a.Pods)
		i := slices.IndexFunc(a.Pods, func(p fleet.PodAssignment) bool { return p.PodSet == x.PodSet && p.Index == x.Index })
		require.GreaterOrEqual(t, i, 0)
		require.Equal(t, x.OldNode, a.Pods[i].Node)
		a.Pods[i].Node = x.NewNode
		m.h.running[x.ID] = a
	}
	for _, x := range d.Grow {
		require.False(t, slices.ContainsFunc(d.Admit, func(a fleet.Admission) bool { return a.ID == x.ID }),
			"%s grown in the cycle that admits it", x.ID)
		a, ok := m.h.running[x.ID]
		require.True(t, ok, "grow of %s, which does not run", x.ID)
		a.Pods = append(slices.Clone(a.Pods), x.Pods...)
		m.h.running[x.ID] = a
	}
	for _, x := range d.Drain {
		require.True(t, m.h.draining[x.ID] == false, "%s told to drain twice", x.ID)
		m.h.draining[x.ID] = true
		if x.Of != "" {
			m.split(t, x)
		}
		m.h.moving[x.ID] = len(x.MoveTo) > 0
	}
	for _, k := range d.Kill {
		require.True(t, m.h.draining[k.ID], "kill of %s, which was never told to drain", k.ID)
		// A host that is slow to kill leaves some victims running: they
		// must be asked again.
		if _, ok := m.h.running[k.ID]; ok && rapid.IntRange(0, 3).Draw(t, "kill now") > 0 {
			m.exit(t, k.ID, gang.ExitKilled)
		}
	}
}

// QuietSchedule runs a cycle at a time before NextChange, with no call
// since but checkpoints: it acts on nothing, repeats the last cycle's
// Overflow and Broken lists, and emits no event but its overflow ones.
func (m *machine) QuietSchedule(t *rapid.T) {
	// Cycles run until one is quiet, a few at most.
	var soon, next time.Time
	for i := 0; ; i++ {
		soon = m.now.Add(time.Nanosecond)
		next = m.nextChange(soon)
		if next.IsZero() || next.After(soon) {
			break
		}
		if i == 3 {
			t.Skip("no quiet cycle")
		}
		m.Schedule(t)
	}
	span := 24 * time.Hour
	if !next.IsZero() {
		span = next.Sub(soon)
	}
	at := soon.Add(time.Duration(rapid.Int64Range(0, int64(span)-1).Draw(t, "before next")))
	d, _ := both(t, m, func(s *fleet.Scheduler) (fleet.Decisions, error) {
		d := s.Schedule(at)
		if m.eventsDiffer {
			d.Events, d.EventsDropped = nil, 0
		}
		return d, nil
	})
	m.eventsDiffer = false
	m.now = at
	for _, n := range []int{len(d.Kill), len(d.Drain), len(d.Failed), len(d.Replace), len(d.Grow), len(d.Admit), len(d.Nominate)} {
		require.Zero(t, n, "a cycle before NextChange %v decided: %+v", next, d)
	}
	require.Equal(t, m.last.Overflow, d.Overflow)
	require.Equal(t, m.last.Broken, d.Broken)
	for _, e := range d.Events {
		if e.Time.Equal(at) && e.Kind != fleet.EventCheckpointed {
			require.Equal(t, fleet.EventOverflow, e.Kind, "a cycle before NextChange emitted %+v", e)
		}
	}
	m.last = d
}

// nextChange is the earlier of the scheduler's and the twin's NextChange:
// a restarted scheduler knows nothing of the cycles before it, so its
// answer may be earlier than the twin's.
func (m *machine) nextChange(now time.Time) time.Time {
	a, b := m.s.NextChange(now), m.twin.NextChange(now)
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// split: the host stops one pod of an elastic workload, which runs on
// with the others; the pod is known by the drain's ID until it exits.
func (m *machine) split(t *rapid.T, x fleet.Drain) {
	a, ok := m.h.running[x.Of]
	require.True(t, ok, "shrink of %s, which does not run", x.Of)
	i := slices.IndexFunc(a.Pods, func(p fleet.PodAssignment) bool { return p.PodSet == x.Pod.PodSet && p.Index == x.Pod.Index })
	require.GreaterOrEqual(t, i, 0, "shrink of a pod %s does not run", x.Of)
	require.Equal(t, a.Pods[i], x.Pod)
	a.Pods = slices.Delete(slices.Clone(a.Pods), i, i+1)
	m.h.running[x.Of] = a
	parent := m.h.specs[x.Of]
	spec := parent.Clone()
	spec.ID = x.ID
	spec.PodSets = []gang.PodSet{{Name: x.Pod.PodSet, Count: 1, GPUsPerPod: x.Pod.GPUs}}
	spec.Topology = gang.TopologyRequest{}
	m.h.specs[x.ID] = spec
	pod := x.Pod
	pod.Index = 0 // the one pod of the split's own spec
	m.h.running[x.ID] = fleet.Admission{ID: x.ID, Queue: spec.Queue, Pods: []fleet.PodAssignment{pod}}
	m.h.started[x.ID] = m.h.started[x.Of]
}

// DrainExit: a victim checkpoints and exits within its grace.
func (m *machine) DrainExit(t *rapid.T) {
	if len(m.h.draining) == 0 {
		t.Skip("nothing drains")
	}
	id := rapid.SampledFrom(slices.Sorted(maps.Keys(m.h.draining))).Draw(t, "victim")
	m.exit(t, id, gang.ExitDrained)
}

func (m *machine) exit(t *rapid.T, id string, how gang.ExitReason) {
	_, err := both(t, m, func(s *fleet.Scheduler) (struct{}, error) { return struct{}{}, s.Exited(m.now, id, how) })
	require.NoError(t, err)
	delete(m.h.running, id)
	delete(m.h.draining, id)
	moved := m.h.moving[id] && (how == gang.ExitDrained || how == gang.ExitKilled)
	delete(m.h.moving, id)
	if _, err := m.s.Explain(id); moved && err == nil {
		return // it restarts at its new place: the scheduler admits it again
	}
	delete(m.h.specs, id)
}

func (m *machine) Exit(t *rapid.T) {
	if len(m.h.running) == 0 {
		t.Skip("nothing runs")
	}
	id := rapid.SampledFrom(slices.Sorted(maps.Keys(m.h.running))).Draw(t, "id")
	m.exit(t, id, rapid.SampledFrom([]gang.ExitReason{gang.ExitFinished, gang.ExitFailed}).Draw(t, "how"))
}

func (m *machine) Cancel(t *rapid.T) {
	if len(m.h.specs) == 0 {
		t.Skip("nothing known")
	}
	id := rapid.SampledFrom(slices.Sorted(maps.Keys(m.h.specs))).Draw(t, "id")
	_, err := both(t, m, func(s *fleet.Scheduler) (struct{}, error) { return struct{}{}, s.Cancel(m.now, id) })
	require.NoError(t, err)
	delete(m.h.running, id)
	delete(m.h.specs, id)
	delete(m.h.draining, id)
}

func (m *machine) Checkpoint(t *rapid.T) {
	if len(m.h.running) == 0 {
		t.Skip("nothing runs")
	}
	id := rapid.SampledFrom(slices.Sorted(maps.Keys(m.h.running))).Draw(t, "id")
	// The host may learn of a checkpoint late: taken up to 10 minutes ago,
	// never before the run started.
	at := m.now.Add(-time.Duration(rapid.IntRange(0, 600).Draw(t, "ago")) * time.Second)
	if at.Before(m.h.started[id]) {
		at = m.h.started[id]
	}
	_, err := both(t, m, func(s *fleet.Scheduler) (struct{}, error) { return struct{}{}, s.Checkpointed(m.now, id, at) })
	require.NoError(t, err)
}

func (m *machine) NodeHealth(t *rapid.T) {
	node := rapid.SampledFrom(m.nodes).Draw(t, "node")
	h := topology.Health(rapid.IntRange(0, 2).Draw(t, "health"))
	affected, err := both(t, m, func(s *fleet.Scheduler) ([]string, error) { return s.SetNodeHealth(m.now, node, h) })
	if errors.Is(err, fleet.ErrBadState) {
		return // an absent node: NodePresence moves it
	}
	require.NoError(t, err)
	m.lost(affected)
}

// lost forgets the workloads a node's failure ended.
func (m *machine) lost(ids []string) {
	for _, id := range ids {
		delete(m.h.running, id)
		delete(m.h.specs, id)
		delete(m.h.draining, id)
	}
}

// Warm reports the models whose weights a node holds; a restart from a
// snapshot keeps them (the twin, which never restarts, would diverge).
func (m *machine) Warm(t *rapid.T) {
	node := rapid.SampledFrom(m.nodes).Draw(t, "node")
	models := rapid.SliceOfN(rapid.SampledFrom([]string{"llama", "qwen", "mistral"}), 0, 2).Draw(t, "models")
	_, err := both(t, m, func(s *fleet.Scheduler) (struct{}, error) { return struct{}{}, s.SetWarm(m.now, node, models) })
	require.NoError(t, err)
}

// SnapshotRestart restarts the scheduler from its snapshot, persisted as
// JSON the way a host keeps it (a file, a ConfigMap), mid-drain or not,
// while the twin runs on: `both` then pins that the restored one makes
// the same decisions as one that never stopped (no victim drained again,
// no deadline extended, no extra victim).
func (m *machine) SnapshotRestart(t *rapid.T) {
	snap := m.s.Snapshot()
	b, err := json.Marshal(snap)
	require.NoError(t, err)
	var back fleet.Snapshot
	require.NoError(t, json.Unmarshal(b, &back))
	m.s, err = fleet.Restore(m.cfg, back)
	require.NoError(t, err)
	require.Equal(t, snap, m.s.Snapshot(), "a restored scheduler shows the state it was restored from")
}

// Restart restarts the scheduler without a snapshot, from what a host
// sees (Adoption's order): a fresh scheduler from the host's current
// configuration (the quota tree as edited, the nodes it took out of
// service absent) adopts what runs, draining or not, with its lost pods
// and the pods it gives up, then what is pending in submission order
// with its nomination, then hears which nodes are cordoned or down. The
// twin runs on: every later decision must equal its own.
func (m *machine) Restart(t *rapid.T) {
	snap := m.s.Snapshot()
	cfg := machineConfig()
	cfg.Quota = m.s.Quota()
	health := map[string]topology.Health{}
	for _, h := range snap.Fleet.Unhealthy {
		health[h.Node] = h.Health
	}
	for i := range cfg.Topology.Nodes {
		cfg.Topology.Nodes[i].Absent = health[cfg.Topology.Nodes[i].Name] == topology.Absent
	}
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	m.cfg = cfg
	for _, w := range snap.Warm {
		require.NoError(t, s.SetWarm(m.now, w.Node, w.Models))
	}
	require.NoError(t, s.AdoptDefragSpent(m.now, snap.DefragSpent), "the hour's defragmentation budget")
	for _, a := range m.adoptions(snap) {
		require.NoError(t, s.Adopt(m.now, a), "adopting %s: %+v", a.Workload.ID, a)
	}
	for _, node := range slices.Sorted(maps.Keys(health)) {
		if h := health[node]; h != topology.Absent {
			affected, err := s.SetNodeHealth(m.now, node, h)
			require.NoError(t, err, "reporting %s %s", node, h)
			require.Empty(t, affected, "%s %s again ends nothing", node, h)
		}
	}
	m.s = s
	m.eventsDiffer = true
}

// adoptions is what the host sees of snap's workloads (hostAdoptions).
func (m *machine) adoptions(snap fleet.Snapshot) []fleet.Adoption {
	return hostAdoptions(snap, m.h.specs, func(id string) []fleet.PodAssignment { return m.h.running[id].Pods })
}

func (m *machine) Check(t *rapid.T) {
	require.NoError(t, m.s.CheckInvariants(), "ledger")
	require.NoError(t, m.twin.CheckInvariants(), "twin's ledger")
	snap := m.s.Snapshot()
	require.Equal(t, snap.Figures(), m.s.Figures(), "Figures are the Snapshot's figures")
	cap := map[string]int{}
	for _, n := range smallConfig().Topology.Nodes {
		cap[n.Name] = n.GPUs
	}
	perNode := map[string]int{}
	perQueue := map[string]int64{} // thousandths of GPU
	shared := sharedGPUs(t, snap)
	for _, r := range snap.Running {
		spec, ok := m.h.specs[r.ID]
		require.True(t, ok, "running workload %s unknown to the host", r.ID)
		total := 0
		for _, ng := range r.Nodes {
			perNode[ng.Node] += ng.GPUs
			total += ng.GPUs
		}
		for _, lp := range r.Lost {
			require.True(t, spec.Drain.SurvivesNodeLoss, "%s lost pods but does not survive it", r.ID)
			total += lp.Pod.GPUs
		}
		hostGPUs, pods := 0, 0
		for _, p := range m.h.running[r.ID].Pods {
			hostGPUs += p.GPUs
			pods++
		}
		require.Equal(t, hostGPUs, total, "%s: the scheduler's pods and the host's", r.ID)
		require.Equal(t, total, r.GPUs, "%s is charged for the pods it runs", r.ID)
		least, most := 0, 0
		for _, ps := range spec.PodSets {
			least, most = least+ps.Min(), most+ps.Count
		}
		if r.SplitOf != "" {
			require.Equal(t, 1, pods, "a split is one pod")
		} else {
			require.GreaterOrEqual(t, pods, least, "partial gang %s", r.ID)
			require.LessOrEqual(t, pods, most, "%s above its count", r.ID)
		}
		perQueue[r.Queue] += r.MilliGPUs
		if req := spec.Topology.Required; req != "" {
			order := map[string]int{"fleet": 0, "spine": 1, "leaf": 2, "node": 3}
			require.GreaterOrEqual(t, order[r.Span], order[req], "%s spans %s, required %s", r.ID, r.Span, req)
		}
		_, hostRuns := m.h.running[r.ID]
		require.True(t, hostRuns, "scheduler thinks %s runs, host does not", r.ID)
	}
	for n, g := range perNode {
		require.LessOrEqual(t, g, cap[n], "node %s double-allocated", n)
	}
	// free + allocated + nominated = capacity.
	allocated := 0
	for _, g := range perNode {
		allocated += g
	}
	require.Equal(t, allocated+snap.Nominated+shared, snap.Fleet.AllocatedGPUs, "allocated GPUs = running + nominated + shared")
	nominated := map[string]int{}
	for _, p := range snap.Pending {
		if p.Nominated {
			nominated[p.Queue] += p.GPUs
		}
	}
	for _, q := range snap.Queues {
		if q.IsQueue {
			milli := perQueue[q.Name] + int64(nominated[q.Name])*1000
			require.EqualValues(t, (milli+999)/1000, q.Flavors[0].InUse, "quota usage of %s", q.Name)
		}
	}
	require.Len(t, m.h.running, len(snap.Running))
}

func TestStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &machine{}
		m.init(t)
		t.Repeat(rapid.StateMachineActions(m))
	})
}

// checkExplain pins that Explain says what the cycle just decided: every
// pending workload has a verdict from it, a nominated one waits for its
// victims (and only one nominated or reclaimed for does), a quota verdict is a refusal, and a topology verdict comes with
// a placement answer behind a quota that fitted.
func (m *machine) checkExplain(t *rapid.T) {
	for _, p := range m.s.Snapshot().Pending {
		x, err := m.s.Explain(p.ID)
		require.NoError(t, err)
		require.NotEqual(t, fleet.WaitUnscheduled, x.Waiting, "%s: the cycle left no verdict", p.ID)
		require.Equal(t, m.now, x.Cycle, "%s: verdict not from this cycle", p.ID)
		// Victims reclaiming shares, slices or cores for it may drain while
		// it waits for another reason (behind its queue's head, say).
		if len(p.Reclaiming) == 0 {
			require.Equal(t, p.Nominated, x.Waiting == fleet.WaitVictims, "%s: %s", p.ID, x.Message)
		} else if p.Nominated {
			require.Equal(t, fleet.WaitVictims, x.Waiting, "%s: %s", p.ID, x.Message)
		}
		switch x.Waiting {
		case fleet.WaitQuota:
			require.NotNil(t, x.Quota)
			require.False(t, x.Quota.Fits(), x.Message)
		case fleet.WaitTopology:
			require.NotNil(t, x.Quota)
			require.True(t, x.Quota.Fits(), x.Message)
			require.NotNil(t, x.Placement, x.Message)
		case fleet.WaitHeadOfQueue, fleet.WaitReservation:
			require.NotEmpty(t, x.Behind, x.Message)
		}
	}
}

// checkGuarantee pins "a queue below its guarantee can always get back to
// it": after a cycle, a pending 1-GPU inference replica whose queue stays
// within its nominal quota is admitted or has a drain in progress for it
// (nominated, or reclaiming shares, slices and cores),
// whenever every node is healthy and every other workload is past its
// class's minimum runtime (so it may be preempted).
func (m *machine) checkGuarantee(t *rapid.T, d fleet.Decisions) {
	snap := m.s.Snapshot()
	if snap.Fleet.HealthyNodes != snap.Fleet.Nodes {
		return
	}
	minRun := map[string]time.Duration{"research": 5 * time.Minute, "batch": time.Minute}
	for id, started := range m.h.started {
		if _, runs := m.h.running[id]; runs && m.now.Sub(started) < minRun[m.h.specs[id].Queue] {
			return
		}
	}
	var inUse, nominal int64
	for _, q := range snap.Queues {
		if q.Name == "prod-inference" {
			inUse, nominal = q.Flavors[0].InUse, q.Flavors[0].Nominal
		}
	}
	for _, p := range snap.Pending {
		w := m.h.specs[p.ID]
		// Victims with shares, slices or cores drain for it without a
		// nomination (Reclaiming).
		if p.Queue != "prod-inference" || w.GPUs() != 1 || p.Nominated || len(p.Reclaiming) > 0 || w.Topology.Required != "" {
			continue
		}
		require.Greater(t, inUse+1, nominal, "replica %s pending while inference uses %d of %d", p.ID, inUse, nominal)
	}
}

// sharedGPUs recounts, from the pods the scheduler reports, the GPUs
// holding shares or MIG slices: none holds more than one GPU of shares,
// no slice is held twice, and every pod gets what its spec asks. It
// returns how many GPUs are partly used.
func sharedGPUs(t *rapid.T, snap fleet.Snapshot) int {
	milli := map[string]int{}
	carved := map[string]uint8{}
	profiles := map[string]topology.MIGProfile{}
	for _, p := range topology.MIGProfiles("H100") {
		profiles[p.Name] = p
	}
	for _, r := range snap.Running {
		for _, p := range r.Pods {
			i := slices.IndexFunc(r.Spec.PodSets, func(ps gang.PodSet) bool { return ps.Name == p.PodSet })
			require.GreaterOrEqual(t, i, 0, "%s: pod set %q", r.ID, p.PodSet)
			ps := r.Spec.PodSets[i]
			require.Equal(t, ps.GPUShare, p.Share, "%s: share", r.ID)
			require.Equal(t, ps.MIG, p.MIG, "%s: MIG profile", r.ID)
			k := fmt.Sprintf("%s/%d", p.Node, p.GPU)
			switch {
			case p.MIG != "":
				prof := profiles[p.MIG]
				span := uint8(0xFF)
				if prof.Slices < topology.MIGSlices {
					span = uint8(1<<prof.Slices-1) << p.Slice
				}
				require.Zero(t, carved[k]&span, "MIG slices of GPU %s booked twice", k)
				carved[k] |= span
				milli[k] += prof.ShareAt(p.Slice)
			case p.Share > 0:
				milli[k] += p.Share
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(milli)) {
		require.LessOrEqual(t, milli[k], topology.MilliGPU, "GPU %s holds more than one GPU of shares or slices", k)
	}
	return len(milli)
}
