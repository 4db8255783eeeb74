package ledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/ledger"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// TestVacateRecounts: holders with shares, MIG slices, cores and whole
// GPUs are vacated on a what-if copy in random order and taken back in
// another; after every step the copy holds exactly what the holders still
// on it hold, recounted from their pods (thousandths and slices per GPU,
// cores per node, whole GPUs per node), and taking everything back
// restores the copy GPU for GPU. The live fleet is never touched.
func TestVacateRecounts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l, qa, _ := sharedBooks(t)
		placer := placement.NewPlacer(placement.Options{})
		var recs []*ledger.Record
		for i := range rapid.IntRange(1, 10).Draw(t, "holders") {
			w := &gang.Workload{ID: fmt.Sprintf("w%d", i), Queue: "a", Shape: gang.Batch, PodSets: []gang.PodSet{drawPodSet(t)}}
			r, err := l.Track(w, qa, 0, ledger.Policy{Preemptible: true})
			require.NoError(t, err)
			a, err := placer.Place(l.Fleet(), w)
			if err != nil {
				continue
			}
			if l.Admit(w.ID, a.Clone(), t0) == nil {
				recs = append(recs, r)
			}
		}
		live := fingerprint(l)
		f := l.Fleet().Clone()
		start := fleetPrint(f)
		on := map[string]bool{}
		for _, r := range recs {
			on[r.W.ID] = true
		}
		check := func() {
			milli := map[[2]int]int{}
			cores := map[topology.NodeID]int64{}
			whole := map[topology.NodeID]int{}
			for _, r := range recs {
				if !on[r.W.ID] {
					continue
				}
				for _, p := range r.Assign.Pods {
					whole[p.Node] += p.GPUs
					switch {
					case p.MIG != "":
						prof, _ := f.NodeMIGProfile(p.Node, p.MIG)
						milli[[2]int{int(p.Node), p.GPU}] += prof.ShareAt(p.Slice)
					case p.Share > 0:
						milli[[2]int{int(p.Node), p.GPU}] += p.Share
					}
					for _, x := range p.Resources {
						cores[p.Node] += x.Amount
					}
				}
			}
			cpu, _ := f.Resource("cpu")
			for n := range topology.NodeID(f.NumNodes()) {
				require.Equal(t, whole[n], f.WholeHeld(n), "node %s: whole GPUs", f.NodeName(n))
				require.Equal(t, cores[n], f.ResourceAllocated(n, cpu), "node %s: cores", f.NodeName(n))
				for i := range f.Capacity(n) {
					if f.GPUWhole(n, i) {
						continue // held whole: counted in WholeHeld
					}
					m, _ := f.GPUUsed(n, i)
					require.Equal(t, milli[[2]int{int(n), i}], m, "node %s GPU %d: thousandths", f.NodeName(n), i)
				}
			}
		}
		check()
		order := rapid.Permutation(recs).Draw(t, "vacate order")
		for _, r := range order {
			require.NoError(t, l.Vacate(f, r, false))
			on[r.W.ID] = false
			check()
		}
		for _, r := range rapid.Permutation(recs).Draw(t, "take-back order") {
			require.NoError(t, l.Vacate(f, r, true))
			on[r.W.ID] = true
			check()
		}
		require.Equal(t, live, fingerprint(l), "the live books changed")
		if len(recs) > 0 {
			require.Error(t, l.Vacate(l.Fleet(), recs[0], false), "vacating on the live fleet")
		}
		// Whole GPUs may come back at other indexes; every count agrees.
		require.Equal(t, start, fleetPrint(f))
	})
}

// fleetPrint is every node's GPUs in use and held whole.
func fleetPrint(f *topology.Fleet) string {
	s := ""
	for n := range topology.NodeID(f.NumNodes()) {
		s += fmt.Sprintf("%d/%d ", f.Allocated(n), f.WholeHeld(n))
	}
	return s
}

// TestDrainServing: a drain for a beneficiary without a nomination is
// listed by ReclaimingFor until the victim exits or a nomination
// promises it, and is refused, changing nothing, for what cannot be
// drained for whom.
func TestDrainServing(t *testing.T) {
	l, qa, _ := sharedBooks(t)
	track := func(id string, ps gang.PodSet) *ledger.Record {
		ps.Name = "p"
		r, err := l.Track(&gang.Workload{ID: id, Queue: "a", Shape: gang.Batch, PodSets: []gang.PodSet{ps}}, qa, 0, ledger.Policy{Preemptible: true})
		require.NoError(t, err)
		return r
	}
	placer := placement.NewPlacer(placement.Options{})
	admit := func(r *ledger.Record) {
		a, err := placer.Place(l.Fleet(), r.W)
		require.NoError(t, err)
		require.NoError(t, l.Admit(r.W.ID, a.Clone(), t0))
	}
	v1, v2 := track("v1", gang.PodSet{Count: 2, GPUShare: 500}), track("v2", gang.PodSet{Count: 1, MIG: "1g.10gb"})
	admit(v1)
	admit(v2)
	track("b", gang.PodSet{Count: 1, GPUsPerPod: 1})
	now := t0.Add(time.Minute)
	for _, tc := range []struct{ name, victim, beneficiary string }{
		{"victim not running", "b", "v1"},
		{"beneficiary not pending", "v1", "v2"},
		{"unknown victim", "x", "b"},
		{"unknown beneficiary", "v1", "x"},
	} {
		before := fingerprint(l)
		_, err := l.DrainServing(tc.victim, tc.beneficiary, now, now.Add(time.Minute), gang.DrainReclaim)
		assert.Error(t, err, tc.name)
		assert.Equal(t, before, fingerprint(l), tc.name)
	}
	_, err := l.DrainServing("v1", "b", now, now.Add(time.Minute), gang.DrainReclaim)
	require.NoError(t, err)
	_, err = l.DrainServing("v2", "b", now, now.Add(time.Minute), gang.DrainReclaim)
	require.NoError(t, err)
	ids := func() []string {
		var out []string
		for _, r := range l.ReclaimingFor("b") {
			out = append(out, r.W.ID)
		}
		return out
	}
	assert.Equal(t, []string{"v1", "v2"}, ids())
	assert.Empty(t, l.Promised(), "nothing is promised")
	assert.Zero(t, l.NumNominations())
	assert.Equal(t, 2, l.NumClaimHolders())
	_, _, err = l.Exit("v1", gang.ExitDrained)
	require.NoError(t, err)
	assert.Equal(t, []string{"v2"}, ids())
	assert.Equal(t, 1, l.NumClaimHolders())
	require.NoError(t, l.CheckInvariants())
}
