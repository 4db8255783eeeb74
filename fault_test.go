package fleet_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// The fault test's length. The default is short enough for every run of
// the tests; the long run (docs/restart.md) is
//
//	go test . -run TestFaults -fault.ops=200000 -fault.seeds=3 -v
//
// (-fault.first=N starts at seed N, so seeds can run side by side).
var (
	faultOps   = flag.Int("fault.ops", 3000, "operations per seed of TestFaults")
	faultSeeds = flag.Int("fault.seeds", 1, "how many seeds TestFaults runs")
	faultFirst = flag.Int("fault.first", 1, "the first seed of TestFaults")
)

// TestFaults drives a random host over the reference fleet: work of every
// shape submitted, run, finished, failed and cancelled; nodes failing,
// cordoned and repaired under gangs that survive node loss; host drains,
// defragmentation, bookings broken and relocated; victims that exit late.
// The scheduler restarts from a JSON snapshot every 500 operations and
// from what the host sees (Adopt) every 700, or every 5,000 and 7,000 in
// long runs. After every operation every workload the scheduler accepted
// must be pending, running or draining there, or have ended with a
// reason the host was told; at each restart by adoption (and at the end)
// a journal of the calls since the previous one must replay to the same
// decisions, byte for byte.
func TestFaults(t *testing.T) {
	for i := range *faultSeeds {
		seed := uint64(*faultFirst + i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			h := newFaultHost(t, seed, *faultOps)
			h.run()
			t.Logf("seed %d: %d operations, %d JSON restarts, %d adopt restarts, %d journals replayed, "+
				"%d workloads accepted, %d ended, %d drains, %d kills, %d node failures, %d moves, %d relocations, lost 0",
				seed, h.ops, h.jsonRestarts, h.adoptRestarts, h.replays, h.accepted, h.ended, h.drains, h.kills,
				h.failures, h.moves, h.relocations)
		})
	}
}

type faultHost struct {
	t   *testing.T
	r   *rand.Rand
	cfg fleet.Config // the configuration of the last restart by adoption
	s   *fleet.Scheduler
	j   *fleet.Journal
	now time.Time
	n   int
	max int

	journal   bytes.Buffer // calls since the journal's scheduler was made
	decisions bytes.Buffer // the decisions it returned, as JSON lines
	replayOK  bool         // the journal starts from New(cfg)

	specs    map[string]gang.Workload         // accepted and not ended
	pods     map[string][]fleet.PodAssignment // running: the host's pods
	draining map[string]time.Time             // told to drain: the deadline
	movers   map[string]bool                  // told to drain with a new place (Drain.MoveTo)
	booking  int
	nodes    []string

	jsonEvery, adoptEvery                                        int
	ops, jsonRestarts, adoptRestarts, replays                    int
	accepted, ended, drains, kills, failures, moves, relocations int
}

func newFaultHost(t *testing.T, seed uint64, ops int) *faultHost {
	h := &faultHost{t: t, r: rand.New(rand.NewPCG(seed, 1)), cfg: fleet.ReferenceConfig(), max: ops,
		now:   time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC),
		specs: map[string]gang.Workload{}, pods: map[string][]fleet.PodAssignment{}, draining: map[string]time.Time{}, movers: map[string]bool{},
		jsonEvery: 500, adoptEvery: 700}
	if ops > 20000 {
		h.jsonEvery, h.adoptEvery = 5000, 7000
	}
	h.cfg.Policy.HotSwapWait = 10 * time.Minute
	for _, n := range h.cfg.Topology.Nodes {
		h.nodes = append(h.nodes, n.Name)
	}
	s, err := fleet.New(h.cfg)
	require.NoError(t, err)
	h.setScheduler(s, true)
	return h
}

// setScheduler puts s in service behind a new journal.
func (h *faultHost) setScheduler(s *fleet.Scheduler, fromNew bool) {
	h.s = s
	h.journal.Reset()
	h.decisions.Reset()
	h.j = fleet.NewJournal(s, &h.journal)
	h.replayOK = fromNew
}

func (h *faultHost) run() {
	for h.ops = 1; h.ops <= h.max; h.ops++ {
		h.step()
		h.check()
		if h.ops%h.adoptEvery == 0 {
			h.adoptRestart()
		} else if h.ops%h.jsonEvery == 0 {
			h.jsonRestart()
		}
	}
	h.ops--
	h.replay()
}

func (h *faultHost) step() {
	switch k := h.r.IntN(100); {
	case k < 30:
		h.submit()
	case k < 60:
		h.schedule()
	case k < 70:
		h.exit()
	case k < 76:
		h.drainExit()
	case k < 79:
		h.cancel()
	case k < 84:
		h.checkpoint()
	case k < 89:
		h.health()
	case k < 91:
		h.hostDrain()
	case k < 93:
		h.defragment()
	case k < 96:
		h.book()
	default:
		h.now = h.now.Add(time.Duration(h.r.IntN(600)) * time.Second)
	}
}

func (h *faultHost) submit() {
	if len(h.specs) >= 300 {
		// A host's users do not queue without end: the backlog stays
		// bounded, so a long run costs the same per operation throughout.
		return
	}
	h.n++
	id := fmt.Sprintf("w%d", h.n)
	var w gang.Workload
	switch k := h.r.IntN(10); {
	case k < 3:
		w = gang.Workload{ID: id, Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
			PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: []int{1, 2, 4, 8}[h.r.IntN(4)]}}}
	case k < 6:
		nodes := []int{1, 2, 4, 8, 16, 32}[h.r.IntN(6)]
		w = gang.Workload{ID: id, Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
			PodSets:  []gang.PodSet{{Name: "workers", Count: nodes, GPUsPerPod: 8}},
			Topology: gang.TopologyRequest{Required: "spine", Preferred: "leaf"},
			Drain: gang.DrainContract{Preemptible: true, CheckpointInterval: 20 * time.Minute,
				SurvivesNodeLoss: h.r.IntN(2) == 0}}
	case k < 8:
		count := 2 + h.r.IntN(15)
		w = gang.Workload{ID: id, Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
			PodSets: []gang.PodSet{{Name: "p", Count: count, MinCount: 1 + h.r.IntN(count), GPUsPerPod: []int{1, 2, 4, 8}[h.r.IntN(4)]}},
			Drain:   gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
	default:
		w = gang.Workload{ID: id, Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
			PodSets: []gang.PodSet{{Name: "p", Count: 1 + h.r.IntN(4), GPUsPerPod: 1 + h.r.IntN(8)}},
			Drain:   gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
	}
	if err := h.j.Submit(h.now, w); err == nil {
		h.specs[id] = w
		h.accepted++
	}
}

func (h *faultHost) schedule() {
	h.now = h.now.Add(time.Duration(1+h.r.IntN(120)) * time.Second)
	d := h.j.Schedule(h.now)
	b, err := json.Marshal(d)
	require.NoError(h.t, err)
	h.decisions.Write(append(b, '\n'))
	for _, k := range d.Kill {
		require.Contains(h.t, h.draining, k.ID, "kill of %s, never told to drain", k.ID)
		if h.r.IntN(4) > 0 { // a slow host leaves some for the next cycle
			h.kills++
			h.exited(k.ID, gang.ExitKilled)
		}
	}
	for _, x := range d.Drain {
		require.NotContains(h.t, h.draining, x.ID, "%s told to drain twice", x.ID)
		h.draining[x.ID] = x.Deadline
		h.drains++
		if x.Of != "" {
			parent := h.pods[x.Of]
			i := slices.Index(parent, x.Pod)
			require.GreaterOrEqual(h.t, i, 0, "shrink of a pod %s does not run", x.Of)
			h.pods[x.Of] = slices.Delete(slices.Clone(parent), i, i+1)
			parentSpec := h.specs[x.Of]
			spec := parentSpec.Clone()
			spec.ID, spec.Topology = x.ID, gang.TopologyRequest{}
			spec.PodSets = []gang.PodSet{{Name: x.Pod.PodSet, Count: 1, GPUsPerPod: x.Pod.GPUs}}
			h.specs[x.ID] = spec
			pod := x.Pod
			pod.Index = 0
			h.pods[x.ID] = []fleet.PodAssignment{pod}
		}
		if len(x.MoveTo) > 0 {
			h.movers[x.ID] = true
			h.moves++
		}
	}
	for _, id := range d.Failed {
		h.told(id)
	}
	for _, x := range d.Replace {
		pods := slices.Clone(h.pods[x.ID])
		i := slices.IndexFunc(pods, func(p fleet.PodAssignment) bool { return p.PodSet == x.PodSet && p.Index == x.Index })
		require.GreaterOrEqual(h.t, i, 0, "op %d: replacement %+v for a pod %s does not run: %+v", h.ops, x, x.ID, h.pods[x.ID])
		pods[i].Node = x.NewNode
		h.pods[x.ID] = pods
	}
	for _, g := range d.Grow {
		h.pods[g.ID] = append(slices.Clone(h.pods[g.ID]), g.Pods...)
	}
	for _, a := range d.Admit {
		require.NotContains(h.t, h.pods, a.ID, "%s admitted twice", a.ID)
		require.Contains(h.t, h.specs, a.ID, "%s admitted, never accepted", a.ID)
		h.pods[a.ID] = a.Pods
	}
	for _, o := range d.Broken {
		if o.Remedy == calendar.Move && h.r.IntN(2) == 0 {
			if _, err := h.j.RelocateBooking(h.now, o.Booking, "ops"); err == nil {
				h.relocations++
			}
		}
	}
}

// pick draws one of ids, sorted, or "" when there is none.
func (h *faultHost) pick(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	slices.Sort(ids)
	return ids[h.r.IntN(len(ids))]
}

func (h *faultHost) exit() {
	var ids []string
	for id := range h.pods {
		if _, ok := h.draining[id]; !ok {
			ids = append(ids, id)
		}
	}
	if id := h.pick(ids); id != "" {
		h.exited(id, []gang.ExitReason{gang.ExitFinished, gang.ExitFailed}[h.r.IntN(2)])
	}
}

func (h *faultHost) drainExit() {
	if id := h.pick(slices.Collect(maps.Keys(h.draining))); id != "" {
		h.exited(id, gang.ExitDrained)
	}
}

// exited reports an exit; a mover that drained restarts at its new place
// without being resubmitted.
func (h *faultHost) exited(id string, how gang.ExitReason) {
	require.NoError(h.t, h.j.Exited(h.now, id, how), "exit of %s", id)
	delete(h.pods, id)
	delete(h.draining, id)
	mover := h.movers[id] && (how == gang.ExitDrained || how == gang.ExitKilled)
	delete(h.movers, id)
	if x, err := h.s.Explain(id); err == nil && x.State == gang.Pending {
		return // a mover, pending at its reserved place
	}
	if mover {
		h.t.Fatalf("op %d: mover %s exited %s and was lost: Drain.MoveTo promised it restarts", h.ops, id, how)
	}
	h.told(id)
}

// told forgets a workload whose end the host was told of.
func (h *faultHost) told(id string) {
	delete(h.movers, id)
	delete(h.specs, id)
	delete(h.pods, id)
	delete(h.draining, id)
	h.ended++
}

func (h *faultHost) cancel() {
	if id := h.pick(slices.Collect(maps.Keys(h.specs))); id != "" {
		require.NoError(h.t, h.j.Cancel(h.now, id))
		h.told(id)
	}
}

func (h *faultHost) checkpoint() {
	if id := h.pick(slices.Collect(maps.Keys(h.pods))); id != "" {
		_ = h.j.Checkpointed(h.now, id, h.now) // refused for a mover that has not restarted yet
	}
}

func (h *faultHost) health() {
	node := h.nodes[h.r.IntN(len(h.nodes))]
	hs := []topology.Health{topology.Healthy, topology.Healthy, topology.Cordoned, topology.Down}[h.r.IntN(4)]
	affected, err := h.j.SetNodeHealth(h.now, node, hs)
	require.NoError(h.t, err)
	if hs == topology.Down {
		h.failures++
	}
	for _, id := range affected {
		if x, err := h.s.Explain(id); err == nil && x.State.HoldsGPUs() {
			continue // a gang that survives node loss: it waits for a replacement
		}
		h.told(id)
	}
}

func (h *faultHost) hostDrain() {
	var ids []string
	for id := range h.pods {
		if _, ok := h.draining[id]; !ok {
			ids = append(ids, id)
		}
	}
	id := h.pick(ids)
	if id == "" {
		return
	}
	d, err := h.j.RequestDrain(h.now, id, time.Duration(30+h.r.IntN(120))*time.Second)
	if err == nil {
		h.draining[id] = d.Deadline
		h.drains++
	}
}

func (h *faultHost) defragment() {
	plan, err := h.s.PlanDefrag(h.now, "leaf", "H100", 0, 1000)
	if err != nil {
		return
	}
	drains, err := h.j.Defragment(h.now, plan)
	if err != nil {
		return
	}
	for _, x := range drains {
		h.draining[x.ID] = x.Deadline
		h.movers[x.ID] = true
		h.drains++
		h.moves++
	}
}

func (h *faultHost) book() {
	if h.r.IntN(3) == 0 {
		if bs := h.s.Bookings(); len(bs) > 0 {
			_ = h.j.CancelBooking(h.now, bs[h.r.IntN(len(bs))].ID, "ops", "done")
			return
		}
	}
	h.booking++
	req := calendar.Request{ID: fmt.Sprintf("b%d", h.booking), Queue: "research", Flavor: "H100",
		GPUs: 64 * (1 + h.r.IntN(2)), Level: "leaf",
		Start: h.now.Add(time.Duration(1+h.r.IntN(12)) * time.Hour), Duration: time.Duration(1+h.r.IntN(6)) * time.Hour}
	opts, err := h.j.Propose(h.now, req)
	if err != nil || len(opts) == 0 {
		return
	}
	_, _ = h.j.Approve(h.now, req.ID, 0, "ops")
}

// check requires every accepted workload to be where the host thinks it
// is: running (or draining) with the host's pods, or pending.
func (h *faultHost) check() {
	snap := h.s.Snapshot()
	known := make(map[string]bool, len(snap.Running)+len(snap.Pending))
	for _, r := range snap.Running {
		known[r.ID] = true
		_, accepted := h.specs[r.ID]
		_, started := h.pods[r.ID]
		deadline, told := h.draining[r.ID]
		if !accepted || !started || r.Draining != told || told && !deadline.Equal(r.Deadline) {
			h.t.Fatalf("op %d: %s runs (draining %t, deadline %s); the host: accepted %t, started %t, told to drain %t by %s",
				h.ops, r.ID, r.Draining, r.Deadline, accepted, started, told, deadline)
		}
	}
	for _, p := range snap.Pending {
		known[p.ID] = true
		if _, started := h.pods[p.ID]; started {
			h.t.Fatalf("op %d: %s pending, the host runs it", h.ops, p.ID)
		}
	}
	for id := range h.specs {
		if !known[id] {
			h.t.Fatalf("op %d: workload %s was lost: neither pending, running nor ended", h.ops, id)
		}
	}
}

// jsonRestart restarts from a snapshot persisted as JSON.
func (h *faultHost) jsonRestart() {
	b, err := json.Marshal(h.s.Snapshot())
	require.NoError(h.t, err)
	var snap fleet.Snapshot
	require.NoError(h.t, json.Unmarshal(b, &snap))
	s, err := fleet.Restore(fleet.ReferenceConfig(), snap)
	require.NoError(h.t, err, "op %d: restore", h.ops)
	h.replay()
	h.setScheduler(s, false)
	h.jsonRestarts++
}

// adoptRestart restarts from what the host sees (Adoption's order).
func (h *faultHost) adoptRestart() {
	snap := h.s.Snapshot()
	h.replay()
	cfg := fleet.ReferenceConfig()
	cfg.Policy = h.cfg.Policy
	cfg.Quota = h.s.Quota()
	s, err := fleet.New(cfg)
	require.NoError(h.t, err)
	h.cfg = cfg
	h.setScheduler(s, true)
	require.NoError(h.t, h.j.AdoptCalendar(h.now, snap.Calendar), "op %d: the calendar", h.ops)
	require.NoError(h.t, h.j.AdoptDefragSpent(h.now, snap.DefragSpent), "op %d: the defragmentation budget", h.ops)
	for _, a := range hostAdoptions(snap, h.specs, func(id string) []fleet.PodAssignment { return h.pods[id] }) {
		require.NoError(h.t, h.j.Adopt(h.now, a), "op %d: adopting %s", h.ops, a.Workload.ID)
	}
	for _, x := range snap.Fleet.Unhealthy {
		affected, err := h.j.SetNodeHealth(h.now, x.Node, x.Health)
		require.NoError(h.t, err)
		require.Empty(h.t, affected, "op %d: %s %s again ends nothing", h.ops, x.Node, x.Health)
	}
	h.adoptRestarts++
}

// replay checks that the journal since the last restart by adoption
// gives the same decisions, byte for byte.
func (h *faultHost) replay() {
	if !h.replayOK {
		return
	}
	var got bytes.Buffer
	_, err := fleet.Replay(h.cfg, bytes.NewReader(h.journal.Bytes()), func(d fleet.Decisions) {
		b, merr := json.Marshal(d)
		require.NoError(h.t, merr)
		got.Write(append(b, '\n'))
	})
	require.NoError(h.t, err, "op %d: replay", h.ops)
	require.Equal(h.t, h.decisions.String(), got.String(), "op %d: the journal replays to other decisions", h.ops)
	h.replays++
}
