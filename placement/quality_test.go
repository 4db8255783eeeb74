package placement_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/traces"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// phillyJob turns a Philly gang size into a workload: up to one node it is
// one pod; larger gangs are whole 8-GPU nodes (4-GPU pods when the size is
// not a multiple of 8) that must share a spine and would like a leaf.
func phillyJob(i, gpus int) *gang.Workload {
	id := fmt.Sprintf("j%d", i)
	switch {
	case gpus <= 8:
		return work(id, 1, gpus, "", "")
	case gpus%8 == 0:
		return work(id, gpus/8, 8, "spine", "leaf")
	default:
		return work(id, gpus/4, 4, "spine", "leaf")
	}
}

// firstFit is the baseline: each pod on the first node, in ID order, with
// room, trying spines in order when the gang must share one.
func firstFit(f *topology.Fleet, w *gang.Workload) (placement.Assignment, bool) {
	domains := []topology.DomainID{topology.Root}
	if w.Topology.Required == "spine" {
		domains = nil
		lo, hi := f.DomainsAt(1)
		for d := lo; d < hi; d++ {
			domains = append(domains, d)
		}
	}
	for _, d := range domains {
		lo, hi := f.Nodes(d)
		free := map[topology.NodeID]int{}
		var a placement.Assignment
		ok := true
		for _, ps := range w.PodSets {
			for range ps.Count {
				placed := false
				for n := lo; n < hi; n++ {
					if _, seen := free[n]; !seen {
						free[n] = f.Free(n)
					}
					if free[n] >= ps.GPUsPerPod {
						free[n] -= ps.GPUsPerPod
						a.Pods = append(a.Pods, placement.Pod{Node: n, GPUs: ps.GPUsPerPod})
						placed = true
						break
					}
				}
				if !placed {
					ok = false
				}
			}
		}
		if ok {
			return a, placement.Apply(f, a) == nil
		}
	}
	return placement.Assignment{}, false
}

// TestPackingQualityPhilly places a seeded stream of jobs drawn from the
// Philly job-size mix on the reference fleet, each job leaving after a
// random lifetime, until the first job that does not fit. Our policy must
// strand fewer GPUs and keep a larger free block than first fit.
func TestPackingQualityPhilly(t *testing.T) {
	type running struct {
		a   placement.Assignment
		end int
	}
	type result struct {
		jobs, stranded, block, allocated int
		meanStranded, meanBlock          float64
	}
	run := func(place func(f *topology.Fleet, w *gang.Workload) (placement.Assignment, bool)) (res result) {
		f, err := topology.New(topology.Reference())
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(7, 11))
		s := traces.NewSampler(traces.PhillySizes())
		var live []running
		for i := 0; ; i++ {
			kept := live[:0]
			for _, j := range live {
				if j.end <= i {
					require.NoError(t, placement.Unapply(f, j.a))
				} else {
					kept = append(kept, j)
				}
			}
			live = kept
			st, _ := f.Stranded()
			blk, _ := f.LargestFreeBlock(2, 0)
			res.meanStranded += float64(st)
			res.meanBlock += float64(blk)
			w := phillyJob(i, s.Draw(r))
			life := int(r.ExpFloat64() * 1500)
			a, ok := place(f, w)
			if !ok {
				res.jobs = i
				break
			}
			live = append(live, running{a, i + 1 + life})
		}
		res.stranded, _ = f.Stranded()
		res.block, _ = f.LargestFreeBlock(2, 0)
		res.allocated = f.Stats(topology.Root, topology.AllGroups).Allocated
		res.meanStranded /= float64(res.jobs + 1)
		res.meanBlock /= float64(res.jobs + 1)
		return res
	}
	p := placement.NewPlacer(placement.Options{})
	ours := run(func(f *topology.Fleet, w *gang.Workload) (placement.Assignment, bool) {
		a, err := p.Place(f, w)
		if err != nil {
			return a, false
		}
		a = a.Clone()
		return a, placement.Apply(f, a) == nil
	})
	ff := run(firstFit)
	for _, r := range []struct {
		name string
		r    result
	}{{"ours", ours}, {"first fit", ff}} {
		t.Logf("%-9s first failure at job %d with %d GPUs allocated and %d stranded; over the run: mean stranded %.1f GPUs, mean largest free leaf block %.2f nodes",
			r.name, r.r.jobs, r.r.allocated, r.r.stranded, r.r.meanStranded, r.r.meanBlock)
	}
	assert.Less(t, ours.stranded, ff.stranded)
	assert.Less(t, ours.meanStranded, ff.meanStranded)
	assert.Greater(t, ours.meanBlock, ff.meanBlock)
}
