package ledger_test

import (
	"cmp"
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

// sharedBooks builds a ledger over two time-sliced 4-GPU H100 nodes and
// one MIG-partitioned 2-GPU H100 node, each with 16 cores, and two queues
// of 6 GPUs and 24 cores in one cohort.
func sharedBooks(t require.TestingT) (*ledger.Ledger, quota.NodeID, quota.NodeID) {
	res := map[string]int64{"cpu": 16000}
	f, err := topology.New(topology.Spec{Levels: []string{"leaf", "node"}, Nodes: []topology.NodeSpec{
		{Name: "n0", Path: []string{"l0"}, GPUs: 4, Flavor: "H100", Resources: res},
		{Name: "n1", Path: []string{"l0"}, GPUs: 4, Flavor: "H100", Resources: res},
		{Name: "m0", Path: []string{"l1"}, GPUs: 2, Flavor: "H100", MIG: true, Resources: res}}})
	require.NoError(t, err)
	q := []quota.FlavorQuota{{Flavor: "H100", Nominal: 5, Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 24000}}}}
	tr, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Resources: []string{"cpu"}, Nodes: []quota.NodeSpec{
		{Name: "all", Kind: quota.Cohort},
		{Name: "a", Parent: "all", Kind: quota.Queue, Quotas: q},
		{Name: "b", Parent: "all", Kind: quota.Queue, Quotas: q},
	}})
	require.NoError(t, err)
	a, _ := tr.Node("a")
	b, _ := tr.Node("b")
	return ledger.New(f, tr), a, b
}

// fingerprint is the state of every GPU, node resource and quota column,
// and the holders: what a refused transaction must leave as it was.
func fingerprint(l *ledger.Ledger) string {
	f, tr := l.Fleet(), l.Tree()
	s := ""
	for n := range topology.NodeID(f.NumNodes()) {
		s += fmt.Sprintf("%s:%d/%d", f.NodeName(n), f.Allocated(n), f.WholeHeld(n))
		for i := range f.Capacity(n) {
			m, sl := f.GPUUsed(n, i)
			s += fmt.Sprintf(",%d/%x", m, sl)
		}
		for r := range topology.ResourceID(f.NumResources()) {
			s += fmt.Sprintf(",%s=%d", f.ResourceName(r), f.ResourceAllocated(n, r))
		}
		s += " "
	}
	for q := range quota.NodeID(tr.NumNodes()) {
		for r := quota.ResourceID(0); int(r) <= tr.NumResources(); r++ {
			s += fmt.Sprintf("%s/%s=%d ", tr.Name(q), tr.ResourceName(r), tr.UsageOf(q, 0, r))
		}
	}
	l.Holders(func(r *ledger.Record) bool {
		s += fmt.Sprintf("%s:%s ", r.W.ID, r.State)
		return true
	})
	return s
}

// drawPodSet draws what one pod set asks: whole GPUs, a share, a MIG
// slice or no GPU, with or without cores.
func drawPodSet(t *rapid.T) gang.PodSet {
	ps := gang.PodSet{Name: "p", Count: rapid.IntRange(1, 3).Draw(t, "pods")}
	switch rapid.IntRange(0, 3).Draw(t, "kind") {
	case 0:
		ps.GPUsPerPod = rapid.IntRange(1, 2).Draw(t, "gpus")
	case 1:
		ps.GPUShare = rapid.SampledFrom([]int{100, 250, 500, 700, 1000}).Draw(t, "share")
	case 2:
		ps.MIG = rapid.SampledFrom([]string{"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "7g.80gb"}).Draw(t, "mig")
	}
	if ps.NoGPU() || rapid.Bool().Draw(t, "with cpu") {
		ps.Resources = []gang.Resource{{Name: "cpu", Amount: int64(rapid.IntRange(1, 8).Draw(t, "cores")) * 1000}}
	}
	return ps
}

// handPlaced is an assignment drawn at random, which may double-book a
// GPU or a slice, overflow a node's cores or name a profile a node lacks:
// the ledger must refuse those whole.
func handPlaced(t *rapid.T, l *ledger.Ledger, w *gang.Workload) placement.Assignment {
	f := l.Fleet()
	ps := w.PodSets[0]
	a := placement.Assignment{Workload: w.ID}
	for i := range ps.Count {
		n := topology.NodeID(rapid.IntRange(0, f.NumNodes()-1).Draw(t, "node"))
		p := placement.Pod{Index: i, Node: n, GPUs: ps.GPUsPerPod, Resources: ps.Resources,
			GPU: rapid.IntRange(0, f.Capacity(n)-1).Draw(t, "gpu")}
		switch {
		case ps.MIG != "":
			p.MIG, p.Slice = ps.MIG, rapid.IntRange(0, 7).Draw(t, "slice")
			prof, _ := f.NodeMIGProfile(n, ps.MIG)
			p.Share = prof.ShareAt(p.Slice)
		case ps.GPUShare > 0:
			p.Share = ps.GPUShare
		}
		a.Pods = append(a.Pods, p)
	}
	return a
}

// TestSharedBooksStayBalanced drives the ledger with shared, MIG,
// CPU-only and whole-GPU work placed by the placer or by hand, victims
// drained for whole-GPU beneficiaries, exits, kills and node losses, and
// after every step recounts, apart from the ledger: every GPU's
// thousandths and slices, every node's cores and every queue's usage of
// GPUs and cores, from what the test itself admitted.
func TestSharedBooksStayBalanced(t *testing.T) {
	var stats struct{ placed, refused, shared int }
	defer func() {
		assert.Positive(t, stats.placed, "nothing was ever placed")
		assert.Positive(t, stats.refused, "no hand placement was ever refused")
		assert.Positive(t, stats.shared, "no shared work ever ran")
	}()
	rapid.Check(t, func(t *rapid.T) {
		l, qa, qb := sharedBooks(t)
		placer := placement.NewPlacer(placement.Options{})
		now := t0
		n := 0
		pending := map[string]bool{}
		held := map[string]placement.Assignment{} // what the test admitted and has not seen end
		holders := func() []string {
			var out []string
			l.Holders(func(r *ledger.Record) bool { out = append(out, r.W.ID); return true })
			return out
		}
		gone := func(id string) { delete(held, id) }
		t.Repeat(map[string]func(*rapid.T){
			"track": func(t *rapid.T) {
				n++
				id := fmt.Sprintf("w%d", n)
				w := &gang.Workload{ID: id, Queue: "a", Shape: gang.Batch, PodSets: []gang.PodSet{drawPodSet(t)}}
				q := rapid.SampledFrom([]quota.NodeID{qa, qb}).Draw(t, "queue")
				_, err := l.Track(w, q, 0, ledger.Policy{Preemptible: true})
				require.NoError(t, err)
				pending[id] = true
			},
			"admit": func(t *rapid.T) {
				if len(pending) == 0 {
					t.Skip("nothing pending")
				}
				id := rapid.SampledFrom(slices.Sorted(maps.Keys(pending))).Draw(t, "id")
				r, _ := l.Get(id)
				var a placement.Assignment
				if rapid.Bool().Draw(t, "by hand") {
					a = handPlaced(t, l, r.W)
				} else {
					x, err := placer.Place(l.Fleet(), r.W)
					if err != nil {
						t.Skip("does not fit")
					}
					a = x.Clone()
				}
				before := fingerprint(l)
				if err := l.Admit(id, a, now); err != nil {
					require.Equal(t, before, fingerprint(l), "a refused admission changed the books: %v", err)
					stats.refused++
					return
				}
				stats.placed++
				if r.HasClaims() {
					stats.shared++
				}
				delete(pending, id)
				held[id] = a
			},
			"nominate": func(t *rapid.T) {
				if len(pending) == 0 {
					t.Skip("nothing pending")
				}
				b := rapid.SampledFrom(slices.Sorted(maps.Keys(pending))).Draw(t, "beneficiary")
				r, _ := l.Get(b)
				ps := r.W.PodSets[0]
				var victims []ledger.Victim
				for _, id := range holders() {
					if rapid.Bool().Draw(t, "victim "+id) {
						victims = append(victims, ledger.Victim{ID: id, Deadline: now.Add(time.Minute), Reason: gang.DrainReclaim})
					}
				}
				nodes := make([]topology.NodeID, ps.Count)
				for i := range nodes {
					nodes[i] = topology.NodeID(rapid.IntRange(0, 1).Draw(t, "node"))
				}
				before := fingerprint(l)
				_, err := l.Nominate(now, ledger.Plan{Victims: victims, Targets: []ledger.Target{{Beneficiary: b, Assign: on(b, ps.GPUsPerPod, nodes...)}}})
				if err != nil {
					require.Equal(t, before, fingerprint(l), "a refused plan changed the books")
					return
				}
				require.False(t, r.HasClaims(), "a shared beneficiary was nominated")
				delete(pending, b)
			},
			"exit": func(t *rapid.T) {
				hs := holders()
				if len(hs) == 0 {
					t.Skip("nothing runs")
				}
				id := rapid.SampledFrom(hs).Draw(t, "id")
				r, _ := l.Get(id)
				how := rapid.SampledFrom([]gang.ExitReason{gang.ExitFinished, gang.ExitKilled, gang.ExitFailed}).Draw(t, "how")
				if r.State == gang.Draining {
					how = gang.ExitDrained
				}
				_, _, err := l.Exit(id, how)
				require.NoError(t, err)
				gone(id)
			},
			"drain": func(t *rapid.T) {
				hs := holders()
				if len(hs) == 0 {
					t.Skip("nothing runs")
				}
				id := rapid.SampledFrom(hs).Draw(t, "id")
				_, err := l.DrainFor(id, now, now.Add(time.Minute), gang.DrainHost)
				require.NoError(t, err)
			},
			"lose node": func(t *rapid.T) {
				node := topology.NodeID(rapid.IntRange(0, l.Fleet().NumNodes()-1).Draw(t, "node"))
				for _, id := range l.OnNode(node) {
					_, _, err := l.Exit(id, gang.ExitNodeLost)
					require.NoError(t, err)
					gone(id)
				}
				for _, nm := range l.Nominations() {
					for _, p := range nm.Target.Pods {
						if p.Node == node {
							l.Dissolve(nm.Beneficiary)
							pending[nm.Beneficiary] = true
							break
						}
					}
				}
				require.NoError(t, l.SetHealth(node, topology.Down))
				require.Empty(t, l.OnNode(node))
				require.NoError(t, l.SetHealth(node, topology.Healthy))
			},
			"start ready": func(t *rapid.T) {
				now = now.Add(time.Minute)
				for _, b := range l.Ready() {
					r, err := l.Start(b, now)
					require.NoError(t, err)
					held[b] = r.Assign
				}
			},
			"": func(t *rapid.T) {
				require.NoError(t, l.CheckInvariants())
				recount(t, l, held)
			},
		})
	})
}

// A GPU carved by MIG slices is charged by the compute slices they take,
// so that however it is carved its slices are charged at most one GPU:
// seven 1g slices, placed or named by hand, are charged 1000 thousandths,
// not 7 x 143.
func TestFullyCarvedMIGGPUChargedOneGPU(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pods  []placement.Pod // by hand; nil: placed
		mig   string
		count int
		milli int64
	}{
		{name: "seven 1g placed", mig: "1g.10gb", count: 7, milli: 1000},
		{name: "six 1g placed", mig: "1g.10gb", count: 6, milli: 6 * 143},
		{name: "three 2g placed", mig: "2g.20gb", count: 3, milli: 3 * 286},
		{name: "four 1g.20gb placed", mig: "1g.20gb", count: 4, milli: 3*143 + 142},
		{name: "two 3g placed", mig: "3g.40gb", count: 2, milli: 429 + 428},
		{name: "4g and 3g by hand", pods: []placement.Pod{
			{Node: 2, GPU: 1, MIG: "4g.40gb", Slice: 0},
			{Node: 2, GPU: 1, MIG: "3g.40gb", Slice: 4},
		}, milli: 1000},
		{name: "2g 2g 2g 1g by hand, shares as the host misreports them", pods: []placement.Pod{
			{Node: 2, GPU: 0, MIG: "2g.20gb", Slice: 0, Share: 286},
			{Node: 2, GPU: 0, MIG: "2g.20gb", Slice: 2, Share: 286},
			{Node: 2, GPU: 0, MIG: "2g.20gb", Slice: 4, Share: 286},
			{Node: 2, GPU: 0, MIG: "1g.20gb", Slice: 6, Share: 143},
		}, milli: 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, qa, _ := sharedBooks(t)
			var sets []gang.PodSet
			if tc.pods == nil {
				sets = []gang.PodSet{{Name: "p", Count: tc.count, MIG: tc.mig}}
			} else {
				for i, p := range tc.pods {
					sets = append(sets, gang.PodSet{Name: fmt.Sprint("p", i), Count: 1, MIG: p.MIG})
					tc.pods[i].PodSet = i
				}
			}
			w := &gang.Workload{ID: "w", Flavor: "H100", PodSets: sets}
			_, err := l.Track(w, qa, 0, ledger.Policy{})
			require.NoError(t, err)
			a := placement.Assignment{Workload: "w", Pods: tc.pods}
			if tc.pods == nil {
				x, err := placement.NewPlacer(placement.Options{}).Place(l.Fleet(), w)
				require.NoError(t, err)
				a = x.Clone()
			}
			require.NoError(t, l.Admit("w", a, t0))
			require.NoError(t, l.CheckInvariants())
			r, _ := l.Get("w")
			assert.Equal(t, tc.milli, r.Charged().MilliGPUs)
			assert.Equal(t, tc.milli, l.Tree().UsageOf(qa, 0, quota.GPU))
			assert.Equal(t, int(tc.milli), l.Fleet().MilliUsed(2))
			if tc.pods == nil {
				for _, p := range a.Pods {
					prof, _ := l.Fleet().NodeMIGProfile(p.Node, p.MIG)
					assert.Equal(t, prof.ShareAt(p.Slice), p.Share, "placement reports the slice's charge")
				}
			}
			_, _, err = l.Exit("w", gang.ExitFinished)
			require.NoError(t, err)
			assert.Zero(t, l.Tree().UsageOf(qa, 0, quota.GPU))
			assert.Zero(t, l.Fleet().MilliUsed(2))
			require.NoError(t, l.CheckInvariants())
		})
	}
}

// recount compares the fleet and the quota tree with a count of the
// assignments the test admitted, apart from the ledger's own books:
// shares and slices per GPU (none twice, none above one GPU), cores per
// node, and thousandths of GPU and cores per queue.
func recount(t *rapid.T, l *ledger.Ledger, held map[string]placement.Assignment) {
	f, tr := l.Fleet(), l.Tree()
	milli := map[[2]int]int{}
	carved := map[[2]int]uint8{}
	cores := map[topology.NodeID]int64{}
	usage := map[quota.NodeID][2]int64{}
	cpu, _ := f.Resource("cpu")
	qcpu, _ := tr.Resource("cpu")
	// In ID order, and every GPU bounded once its pods are all counted:
	// the verdict and its message depend on the books alone.
	for _, id := range slices.Sorted(maps.Keys(held)) {
		a := held[id]
		r, ok := l.Get(id)
		require.True(t, ok && r.State.HoldsGPUs(), "%s ran and is not a holder", id)
		u := usage[r.Queue]
		for _, p := range a.Pods {
			u[0] += p.MilliGPUs()
			for _, x := range p.Resources {
				cores[p.Node] += x.Amount
				u[1] += x.Amount
			}
			k := [2]int{int(p.Node), p.GPU}
			switch {
			case p.MIG != "":
				prof, ok := f.NodeMIGProfile(p.Node, p.MIG)
				require.True(t, ok)
				span := uint8(0xFF)
				if prof.Slices < topology.MIGSlices {
					span = uint8(1<<prof.Slices-1) << p.Slice
				}
				require.Zero(t, carved[k]&span, "slice of GPU %v booked twice", k)
				carved[k] |= span
				milli[k] += prof.ShareAt(p.Slice)
				require.Equal(t, prof.ShareAt(p.Slice), p.Share, "the pod's share is its slice's charge")
			case p.Share > 0:
				milli[k] += p.Share
			}
		}
		usage[r.Queue] = u
	}
	for _, k := range slices.SortedFunc(maps.Keys(milli), func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }) {
		require.LessOrEqual(t, milli[k], topology.MilliGPU, "GPU %v overbooked (slices %#x)", k, carved[k])
	}
	for n := range topology.NodeID(f.NumNodes()) {
		for i := range f.Capacity(n) {
			if f.GPUWhole(n, i) {
				require.Zero(t, milli[[2]int{int(n), i}], "a share on a GPU held whole")
				continue
			}
			m, sl := f.GPUUsed(n, i)
			require.Equal(t, milli[[2]int{int(n), i}], m, "thousandths of GPU %d of %s", i, f.NodeName(n))
			require.Equal(t, carved[[2]int{int(n), i}], sl, "slices of GPU %d of %s", i, f.NodeName(n))
		}
		require.Equal(t, cores[n], f.ResourceAllocated(n, cpu), "cores of %s", f.NodeName(n))
	}
	nominated := map[quota.NodeID]int64{}
	for _, nm := range l.Nominations() {
		r, _ := l.Get(nm.Beneficiary)
		nominated[r.Queue] += int64(r.GPUs()) * 1000
	}
	for q := range quota.NodeID(tr.NumNodes()) {
		if !tr.IsQueue(q) {
			continue
		}
		require.Equal(t, usage[q][0]+nominated[q], tr.UsageOf(q, 0, quota.GPU), "GPU usage of %s", tr.Name(q))
		require.Equal(t, usage[q][1], tr.UsageOf(q, 0, qcpu), "cpu usage of %s", tr.Name(q))
	}
}

// Whole GPUs are counted per node, so a search that releases and takes
// them back on the mirror may leave them at other indexes than on the
// live fleet; a share then named on a GPU the mirror holds whole still
// goes on both. Adoption in any order works the same way on the live
// fleet: a share named on a GPU some counted whole GPU happens to occupy
// moves that whole GPU aside.
func TestClaimsOnGPUsHeldWholeByCount(t *testing.T) {
	l, qa, _ := sharedBooks(t)
	track := func(id string, ps gang.PodSet) {
		_, err := l.Track(&gang.Workload{ID: id, PodSets: []gang.PodSet{ps}}, qa, 0, ledger.Policy{})
		require.NoError(t, err)
	}
	share := func(id string, gpu int) placement.Assignment {
		return placement.Assignment{Workload: id, Pods: []placement.Pod{{Node: 0, GPU: gpu, Share: 500}}}
	}
	track("x", gang.PodSet{Name: "p", Count: 1, GPUsPerPod: 1})
	require.NoError(t, l.Admit("x", on("x", 1, 0), t0)) // GPU 0
	track("s", gang.PodSet{Name: "p", Count: 1, GPUShare: 500})
	require.NoError(t, l.Admit("s", share("s", 1), t0))
	track("y", gang.PodSet{Name: "p", Count: 1, GPUsPerPod: 1})
	require.NoError(t, l.Admit("y", on("y", 1, 0), t0)) // GPU 2
	_, _, err := l.Exit("s", gang.ExitFinished)
	require.NoError(t, err)
	// The fleet keeps its whole GPUs on its lowest free GPUs (0 and 1);
	// a search that gave one back at another index left the mirror
	// holding GPUs 0 and 3.
	assert.True(t, l.Fleet().GPUWhole(0, 0))
	assert.True(t, l.Fleet().GPUWhole(0, 1))
	require.NoError(t, l.Scratch().Release(0, 1))
	require.NoError(t, l.Scratch().AllocateClaim(topology.Claim{Node: 0, Whole: 1 << 3}))
	assert.True(t, l.Scratch().GPUWhole(0, 3))
	assert.False(t, l.Fleet().GPUWhole(0, 3))

	track("t", gang.PodSet{Name: "p", Count: 1, GPUShare: 500})
	require.NoError(t, l.Admit("t", share("t", 3), t0))
	require.NoError(t, l.CheckInvariants())

	// On the live fleet: GPU 0 is held whole by x; a share adopted there
	// moves x's GPU to a free one.
	track("u", gang.PodSet{Name: "p", Count: 1, GPUShare: 500})
	require.NoError(t, l.Admit("u", share("u", 0), t0))
	require.NoError(t, l.CheckInvariants())
	assert.Equal(t, 2, l.Fleet().WholeHeld(0))
	m, _ := l.Fleet().GPUUsed(0, 0)
	assert.Equal(t, 500, m)

	// With no whole-free GPU left to move to, the claim is refused and
	// nothing changes.
	track("v", gang.PodSet{Name: "p", Count: 1, GPUShare: 500})
	before := fingerprint(l)
	require.Error(t, l.Admit("v", share("v", 2), t0))
	assert.Equal(t, before, fingerprint(l))
	require.NoError(t, l.CheckInvariants())
}
