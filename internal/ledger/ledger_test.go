package ledger_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// books builds a ledger over 4 nodes of 8 GPUs (2 leaves of 2) and two
// queues of 16 GPUs in one cohort.
func books(t require.TestingT) (*ledger.Ledger, quota.NodeID, quota.NodeID) {
	f, err := topology.New(topology.Uniform(topology.UniformSpec{Levels: []string{"leaf", "node"},
		Fanout: []int{2, 2}, GPUsPerNode: 8, Flavor: "H100"}))
	require.NoError(t, err)
	tr, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{
		{Name: "all", Kind: quota.Cohort},
		{Name: "a", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 16}}},
		{Name: "b", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 16}}},
	}})
	require.NoError(t, err)
	a, _ := tr.Node("a")
	b, _ := tr.Node("b")
	return ledger.New(f, tr), a, b
}

func work(id string, pods, gpus int) *gang.Workload {
	return &gang.Workload{ID: id, PodSets: []gang.PodSet{{Name: "p", Count: pods, GPUsPerPod: gpus}}}
}

// on places pods of gpus GPUs each on the given nodes, in order.
func on(id string, gpus int, nodes ...topology.NodeID) placement.Assignment {
	a := placement.Assignment{Workload: id}
	for i, n := range nodes {
		a.Pods = append(a.Pods, placement.Pod{Index: i, Node: n, GPUs: gpus})
	}
	return a
}

func TestAdmitAndExitKeepTheBooks(t *testing.T) {
	l, qa, _ := books(t)
	_, err := l.Track(work("x", 2, 8), qa, 0, ledger.Policy{Preemptible: true})
	require.NoError(t, err)
	require.NoError(t, l.Admit("x", on("x", 8, 0, 1), t0))
	r, _ := l.Get("x")
	assert.Equal(t, gang.Admitted, r.State)
	assert.Equal(t, 16, l.Fleet().Allocated(0)+l.Fleet().Allocated(1))
	assert.EqualValues(t, 16, l.Tree().Usage(qa, 0))
	require.Equal(t, 1, l.Index().Len())
	require.NoError(t, l.CheckInvariants())

	_, _, err = l.Exit("x", gang.ExitFinished)
	require.NoError(t, err)
	assert.Equal(t, 0, l.Fleet().Allocated(0))
	assert.EqualValues(t, 0, l.Tree().Usage(qa, 0))
	assert.Zero(t, l.Index().Len())
	require.NoError(t, l.CheckInvariants())
}

func TestRefusedCallsChangeNothing(t *testing.T) {
	l, qa, qb := books(t)
	_, err := l.Track(work("x", 1, 8), qa, 0, ledger.Policy{})
	require.NoError(t, err)
	require.NoError(t, l.Admit("x", on("x", 8, 0), t0))
	_, err = l.Track(work("y", 1, 8), qb, 0, ledger.Policy{})
	require.NoError(t, err)

	tests := []struct {
		name string
		call func() error
	}{
		{"admit on a full node", func() error { return l.Admit("y", on("y", 8, 0), t0) }},
		{"admit an unknown workload", func() error { return l.Admit("nope", on("nope", 8, 1), t0) }},
		{"admit twice", func() error { return l.Admit("x", on("x", 8, 1), t0) }},
		{"exit an unknown workload", func() error { _, _, err := l.Exit("nope", gang.ExitFinished); return err }},
		{"exit with no reason", func() error { _, _, err := l.Exit("x", 0); return err }},
		{"checkpoint in the future", func() error { return l.Checkpoint("x", t0.Add(time.Hour), t0) }},
		{"checkpoint before the start", func() error { return l.Checkpoint("x", t0.Add(-time.Hour), t0) }},
		{"checkpoint pending work", func() error { return l.Checkpoint("y", t0, t0) }},
		{"nominate without target", func() error { _, err := l.Nominate(t0, ledger.Plan{}); return err }},
		{"nominate running work", func() error {
			_, err := l.Nominate(t0, ledger.Plan{Targets: []ledger.Target{{Beneficiary: "x", Assign: on("x", 8, 1)}}})
			return err
		}},
		{"nominate on GPUs nobody frees", func() error {
			_, err := l.Nominate(t0, ledger.Plan{Targets: []ledger.Target{{Beneficiary: "y", Assign: on("y", 8, 0)}}})
			return err
		}},
		{"a victim named twice", func() error {
			_, err := l.Nominate(t0, ledger.Plan{
				Victims: []ledger.Victim{{ID: "x", Deadline: t0, Reason: gang.DrainReclaim}, {ID: "x", Deadline: t0, Reason: gang.DrainReclaim}},
				Targets: []ledger.Target{{Beneficiary: "y", Assign: on("y", 8, 0)}}})
			return err
		}},
		{"a victim without reason", func() error {
			_, err := l.Nominate(t0, ledger.Plan{Victims: []ledger.Victim{{ID: "x", Deadline: t0}},
				Targets: []ledger.Target{{Beneficiary: "y", Assign: on("y", 8, 0)}}})
			return err
		}},
		{"a target of the wrong size", func() error {
			_, err := l.Nominate(t0, ledger.Plan{Targets: []ledger.Target{{Beneficiary: "y", Assign: on("y", 4, 1)}}})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(l)
			require.Error(t, tt.call())
			assert.Equal(t, before, snapshot(l))
			require.NoError(t, l.CheckInvariants())
		})
	}
}

// snapshot renders what the books hold, for before/after comparisons.
func snapshot(l *ledger.Ledger) string {
	s := l.Fleet().String()
	for q := range quota.NodeID(l.Tree().NumNodes()) {
		s += fmt.Sprintf("%s=%d ", l.Tree().Name(q), l.Tree().Usage(q, 0))
	}
	l.Holders(func(r *ledger.Record) bool {
		s += fmt.Sprintf("%s:%s ", r.W.ID, r.State)
		return true
	})
	for _, n := range l.Nominations() {
		s += fmt.Sprintf("nom %s waits %v ", n.Beneficiary, n.WaitOn)
	}
	return s
}

// Two replicas share one plan with two victims, one on each replica's
// node: each starts as soon as its own victim exits.
func TestEachReplicaWaitsOnlyForItsOwnVictims(t *testing.T) {
	l, qa, qb := books(t)
	for i, id := range []string{"v0", "v1"} {
		_, err := l.Track(work(id, 1, 8), qb, 0, ledger.Policy{Preemptible: true})
		require.NoError(t, err)
		require.NoError(t, l.Admit(id, on(id, 8, topology.NodeID(i)), t0))
	}
	for _, id := range []string{"r0", "r1"} {
		_, err := l.Track(work(id, 1, 8), qa, 0, ledger.Policy{})
		require.NoError(t, err)
	}
	got, err := l.Nominate(t0, ledger.Plan{
		Victims: []ledger.Victim{
			{ID: "v0", Deadline: t0.Add(time.Minute), Reason: gang.DrainReclaim},
			{ID: "v1", Deadline: t0.Add(2 * time.Minute), Reason: gang.DrainReclaim}},
		Targets: []ledger.Target{{Beneficiary: "r0", Assign: on("r0", 8, 0)}, {Beneficiary: "r1", Assign: on("r1", 8, 1)}}})
	require.NoError(t, err)
	require.Len(t, got.Drained, 2)
	require.NoError(t, l.CheckInvariants())
	n0, _ := l.Nomination("r0")
	n1, _ := l.Nomination("r1")
	assert.Equal(t, []string{"v0"}, n0.WaitOn)
	assert.Equal(t, t0.Add(time.Minute), n0.ReadyBy)
	assert.Equal(t, []string{"v1"}, n1.WaitOn)
	v0, _ := l.Get("v0")
	assert.Equal(t, []string{"r0"}, v0.Drain.Beneficiaries)
	assert.True(t, l.Tracked("v0"))

	_, _, err = l.Exit("v1", gang.ExitDrained)
	require.NoError(t, err)
	assert.Equal(t, []string{"r1"}, l.Ready(), "r1's victim is gone, r0's is not")
	_, err = l.Start("r1", t0.Add(time.Minute))
	require.NoError(t, err)
	require.NoError(t, l.CheckInvariants())

	// v0 overstays: it is due at every call until it exits.
	for i, now := range []time.Time{t0.Add(time.Minute), t0.Add(5 * time.Minute)} {
		due := l.Due(now)
		require.Len(t, due, 1)
		assert.Equal(t, "v0", due[0].Record.W.ID)
		assert.Equal(t, i == 0, due[0].First)
		assert.Equal(t, now.Sub(t0.Add(time.Minute)), due[0].By)
	}
	_, _, err = l.Exit("v0", gang.ExitKilled)
	require.NoError(t, err)
	assert.Equal(t, []string{"r0"}, l.Ready())
	require.NoError(t, l.CheckInvariants())
}

// A dissolved nomination frees what it reserved and its quota; its victim
// drains on, no longer promised, so a later search may count it.
func TestDissolveReturnsWhatWasHeld(t *testing.T) {
	l, qa, qb := books(t)
	_, err := l.Track(work("v", 1, 4), qb, 0, ledger.Policy{Preemptible: true})
	require.NoError(t, err)
	require.NoError(t, l.Admit("v", on("v", 4, 0), t0))
	_, err = l.Track(work("b", 1, 8), qa, 0, ledger.Policy{})
	require.NoError(t, err)
	_, err = l.Nominate(t0, ledger.Plan{Victims: []ledger.Victim{{ID: "v", Deadline: t0.Add(time.Minute), Reason: gang.DrainReclaim}},
		Targets: []ledger.Target{{Beneficiary: "b", Assign: on("b", 8, 0)}}})
	require.NoError(t, err)
	assert.Equal(t, 8, l.Fleet().Allocated(0), "4 held by the victim, 4 reserved")
	assert.Equal(t, 4, l.Reserved(0))
	assert.Equal(t, 4, l.Claimed(0))
	assert.EqualValues(t, 8, l.Tree().Usage(qa, 0))

	assert.Equal(t, 4, l.Dissolve("b"))
	assert.Equal(t, 4, l.Fleet().Allocated(0))
	assert.EqualValues(t, 0, l.Tree().Usage(qa, 0))
	assert.False(t, l.Tracked("v"))
	v, _ := l.Get("v")
	assert.Equal(t, gang.Draining, v.State)
	assert.Equal(t, []string{"b"}, v.Drain.Beneficiaries, "history keeps who it was drained for")
	assert.Empty(t, v.Drain.Live)
	require.NoError(t, l.CheckInvariants())
}

func TestLateCheckpointKeepsTheLatest(t *testing.T) {
	l, qa, _ := books(t)
	_, err := l.Track(work("x", 1, 8), qa, 0, ledger.Policy{Preemptible: true})
	require.NoError(t, err)
	require.NoError(t, l.Admit("x", on("x", 8, 0), t0))
	require.NoError(t, l.Checkpoint("x", t0.Add(30*time.Minute), t0.Add(time.Hour)))
	require.NoError(t, l.Checkpoint("x", t0.Add(10*time.Minute), t0.Add(time.Hour)), "an older checkpoint learnt late is not an error")
	r, _ := l.Get("x")
	assert.Equal(t, t0.Add(30*time.Minute), r.LastCheckpoint())
}

// TestBooksStayBalanced drives the ledger with random transactions and
// recounts the books after every step.
func TestBooksStayBalanced(t *testing.T) {
	var stats [1]int // plans accepted over every run: the test must exercise them
	defer func() { assert.Positive(t, stats[0], "no plan was ever accepted") }()
	rapid.Check(t, func(t *rapid.T) {
		l, qa, qb := books(t)
		now := t0
		n := 0
		pending := map[string]bool{}
		nominated := 0
		defer func() { stats[0] += nominated }()
		holders := func() []string {
			var out []string
			l.Holders(func(r *ledger.Record) bool { out = append(out, r.W.ID); return true })
			return out
		}
		t.Repeat(map[string]func(*rapid.T){
			"track": func(t *rapid.T) {
				n++
				id := fmt.Sprintf("w%d", n)
				q := rapid.SampledFrom([]quota.NodeID{qa, qb}).Draw(t, "queue")
				_, err := l.Track(work(id, rapid.IntRange(1, 2).Draw(t, "pods"), rapid.SampledFrom([]int{1, 4, 8}).Draw(t, "gpus")), q, 0, ledger.Policy{Preemptible: true})
				require.NoError(t, err)
				pending[id] = true
			},
			"admit": func(t *rapid.T) {
				if len(pending) == 0 {
					t.Skip("nothing pending")
				}
				id := rapid.SampledFrom(slices.Sorted(maps.Keys(pending))).Draw(t, "id")
				r, _ := l.Get(id)
				ps := r.W.PodSets[0]
				nodes := make([]topology.NodeID, ps.Count)
				for i := range nodes {
					nodes[i] = topology.NodeID(rapid.IntRange(0, 3).Draw(t, "node"))
				}
				before := snapshot(l)
				if err := l.Admit(id, on(id, ps.GPUsPerPod, nodes...), now); err != nil {
					require.Equal(t, before, snapshot(l), "a refused admission changed the books")
					return
				}
				delete(pending, id)
			},
			"nominate": func(t *rapid.T) {
				if len(pending) == 0 {
					t.Skip("nothing pending")
				}
				b := rapid.SampledFrom(slices.Sorted(maps.Keys(pending))).Draw(t, "beneficiary")
				r, _ := l.Get(b)
				ps := r.W.PodSets[0]
				nodes := make([]topology.NodeID, ps.Count)
				for i := range nodes {
					nodes[i] = topology.NodeID(rapid.IntRange(0, 3).Draw(t, "node"))
				}
				var victims []ledger.Victim
				for _, id := range holders() {
					if rapid.Bool().Draw(t, "victim "+id) {
						victims = append(victims, ledger.Victim{ID: id, Deadline: now.Add(time.Minute), Reason: gang.DrainReclaim})
					}
				}
				before := snapshot(l)
				if _, err := l.Nominate(now, ledger.Plan{Victims: victims, Targets: []ledger.Target{{Beneficiary: b, Assign: on(b, ps.GPUsPerPod, nodes...)}}}); err != nil {
					require.Equal(t, before, snapshot(l), "a refused plan changed the books")
					return
				}
				delete(pending, b)
				nominated++
			},
			"exit": func(t *rapid.T) {
				hs := holders()
				if len(hs) == 0 {
					t.Skip("nothing runs")
				}
				id := rapid.SampledFrom(hs).Draw(t, "id")
				r, _ := l.Get(id)
				how := gang.ExitFinished
				if r.State == gang.Draining {
					how = gang.ExitDrained
				}
				_, _, err := l.Exit(id, how)
				require.NoError(t, err)
			},
			"cancel": func(t *rapid.T) {
				if len(pending) == 0 && l.NumNominations() == 0 {
					t.Skip("nothing pending")
				}
				ids := slices.Sorted(maps.Keys(pending))
				for _, nm := range l.Nominations() {
					ids = append(ids, nm.Beneficiary)
				}
				id := rapid.SampledFrom(ids).Draw(t, "id")
				_, _, err := l.Exit(id, gang.ExitCancelled)
				require.NoError(t, err)
				delete(pending, id)
			},
			"start ready": func(t *rapid.T) {
				now = now.Add(time.Minute)
				for _, b := range l.Ready() {
					_, err := l.Start(b, now)
					require.NoError(t, err)
				}
				for _, o := range l.Due(now) {
					require.False(t, o.Record.Drain.Deadline.After(now))
				}
			},
			"": func(t *rapid.T) {
				require.NoError(t, l.CheckInvariants())
				// The index holds exactly the holders, as they are now.
				n := 0
				l.Holders(func(r *ledger.Record) bool {
					n++
					x, ok := l.Index().Get(r.W.ID)
					require.True(t, ok, "%s holds GPUs but is not indexed", r.W.ID)
					// A promised victim is hidden from the index (gone for
					// every search); any other drain shows.
					promised := r.Drain != nil && r.Drain.Promised()
					require.Equal(t, r.State == gang.Draining && !promised, x.Draining)
					require.Equal(t, r.Nodes, x.Nodes)
					return true
				})
				require.Equal(t, n, l.Index().Len())
			},
		})
	})
}

// Victims past their deadline are due by deadline, then ID; one exactly
// at its deadline is due, one a nanosecond before it is not.
func TestDueOrderAndBoundary(t *testing.T) {
	l, qa, qb := books(t)
	for i, id := range []string{"c", "a", "b"} {
		_, err := l.Track(work(id, 1, 8), qb, 0, ledger.Policy{Preemptible: true})
		require.NoError(t, err)
		require.NoError(t, l.Admit(id, on(id, 8, topology.NodeID(i)), t0))
	}
	_, err := l.Track(work("x", 1, 8), qa, 0, ledger.Policy{})
	require.NoError(t, err)
	_, err = l.Nominate(t0, ledger.Plan{
		Victims: []ledger.Victim{
			{ID: "c", Deadline: t0.Add(time.Minute), Reason: gang.DrainReclaim},
			{ID: "a", Deadline: t0.Add(2 * time.Minute), Reason: gang.DrainReclaim},
			{ID: "b", Deadline: t0.Add(time.Minute), Reason: gang.DrainReclaim}},
		Targets: []ledger.Target{{Beneficiary: "x", Assign: on("x", 8, 3)}}})
	require.NoError(t, err)
	assert.Empty(t, l.Due(t0.Add(time.Minute-1)))
	ids := func(os []ledger.Overdue) []string {
		var out []string
		for _, o := range os {
			out = append(out, o.Record.W.ID)
		}
		return out
	}
	assert.Equal(t, []string{"b", "c"}, ids(l.Due(t0.Add(time.Minute))))
	assert.Equal(t, []string{"b", "c", "a"}, ids(l.Due(t0.Add(2*time.Minute))))
}

// A promised victim that loses a pod with its node and gets it back on
// another node is listed under the nodes it holds at each step: a later
// plan that claims its GPUs finds it where it runs.
func TestPromisedVictimFollowsItsReplacedPod(t *testing.T) {
	l, qa, qb := books(t)
	v := work("v", 2, 8)
	v.Drain.SurvivesNodeLoss = true
	_, err := l.Track(v, qb, 0, ledger.Policy{Preemptible: true})
	require.NoError(t, err)
	require.NoError(t, l.Admit("v", on("v", 8, 0, 2), t0))
	_, err = l.Track(work("r", 1, 8), qa, 0, ledger.Policy{})
	require.NoError(t, err)
	_, err = l.Nominate(t0, ledger.Plan{
		Victims: []ledger.Victim{{ID: "v", Deadline: t0.Add(time.Minute), Reason: gang.DrainReclaim}},
		Targets: []ledger.Target{{Beneficiary: "r", Assign: on("r", 8, 0)}}})
	require.NoError(t, err)
	require.NoError(t, l.CheckInvariants())

	lost, err := l.LosePods("v", 2, t0)
	require.NoError(t, err)
	require.Len(t, lost, 1)
	require.NoError(t, l.CheckInvariants(), "after the loss")
	_, err = l.Replace("v", lost[0].Pod, 3)
	require.NoError(t, err)
	require.NoError(t, l.CheckInvariants(), "after the replacement")
	r, _ := l.Get("v")
	assert.Equal(t, []placement.NodeGPUs{{Node: 0, GPUs: 8}, {Node: 3, GPUs: 8}}, r.Nodes)
}
