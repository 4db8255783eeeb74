package fleet_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// TestReclaimSharedProperty: on one node filled at random by borrowed
// batch work holding shares, MIG slices, cores or whole GPUs, inference
// (under its nominal quota, which is the whole node) asks for any of
// those. Then, checked against brute force:
//   - it is admitted at once, or victims drain for it; never neither
//     (with every filler gone it always fits, so a plan always exists);
//   - the victims are 1-minimal: with any one of them still running it
//     is not admitted, with all of them gone it is, and it drains nobody
//     else meanwhile.
func TestReclaimSharedProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gpus := rapid.IntRange(1, 4).Draw(t, "gpus")
		mig := rapid.Bool().Draw(t, "mig")
		cfg := reclaimConfig(gpus, mig)
		podSet := func(label string) gang.PodSet {
			ps := gang.PodSet{Name: "p", Count: rapid.IntRange(1, 2).Draw(t, label+" count")}
			switch rapid.IntRange(0, 3).Draw(t, label+" kind") {
			case 0:
				ps.GPUsPerPod = rapid.IntRange(1, gpus).Draw(t, label+" gpus")
				ps.Count = 1
			case 1:
				if mig {
					ps.MIG = rapid.SampledFrom([]string{"1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"}).Draw(t, label+" mig")
				} else {
					ps.GPUShare = rapid.SampledFrom([]int{250, 500, 1000}).Draw(t, label+" share")
				}
			case 2:
				ps.Resources = []gang.Resource{{Name: "cpu", Amount: rapid.SampledFrom([]int64{8000, 16000, 32000}).Draw(t, label+" cpu")}}
			case 3:
				ps.GPUShare = 0
				ps.GPUsPerPod = 1
				ps.Resources = []gang.Resource{{Name: "cpu", Amount: 8000}}
				if mig {
					ps.GPUsPerPod, ps.MIG = 0, "1g.10gb"
				}
			}
			return ps
		}
		fillers := rapid.IntRange(1, 10).Draw(t, "fillers")
		var specs []gang.Workload
		for i := range fillers {
			specs = append(specs, gang.Workload{ID: fmt.Sprintf("b%d", i), Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch,
				Shape: gang.Batch, PodSets: []gang.PodSet{podSet(fmt.Sprintf("filler %d", i))}, Drain: gang.DrainContract{Preemptible: true}})
		}
		now := t0.Add(10 * time.Minute)
		ask := podSet("ask")
		ask.Count = 1
		// build replays the same calls on a fresh scheduler, up to the
		// cycle that reclaims (a restored copy need not place whole GPUs
		// at the same indexes, so the brute force replays instead).
		build := func() (*fleet.Scheduler, fleet.Decisions, []string) {
			s, err := fleet.New(cfg)
			require.NoError(t, err)
			for _, w := range specs {
				if s.Submit(t0, w) != nil {
					continue // a pod set the node can never hold
				}
				if len(s.Schedule(t0).Admit) == 0 {
					require.NoError(t, s.Cancel(t0, w.ID))
				}
			}
			var running []string
			for _, r := range s.Snapshot().Running {
				running = append(running, r.ID)
			}
			require.NoError(t, s.Submit(now, gang.Workload{ID: "inf", Queue: "prod-inference", PriorityClass: fleet.ClassProdInference,
				Shape: gang.Inference, PodSets: []gang.PodSet{ask}}))
			return s, s.Schedule(now), running
		}
		s, d, running := build()
		require.NoError(t, s.CheckInvariants())
		if len(d.Admit) == 1 {
			require.Empty(t, d.Drain, "admitted and draining for it")
			return
		}
		require.NotEmpty(t, d.Drain, "inference under its nominal quota neither admitted nor reclaiming (running %v)", running)
		var victims []string
		for _, x := range d.Drain {
			require.Contains(t, running, x.ID)
			require.Equal(t, []string{"inf"}, x.Beneficiaries)
			victims = append(victims, x.ID)
		}
		slices.Sort(victims)
		later := now.Add(time.Second)
		for _, keep := range victims {
			f, _, _ := build()
			for _, v := range victims {
				if v != keep {
					require.NoError(t, f.Exited(later, v, gang.ExitDrained))
				}
			}
			x := f.Schedule(later)
			require.Empty(t, x.Admit, "admitted with victim %s still running: %v is not 1-minimal", keep, victims)
			require.Empty(t, x.Drain, "drained more while its victims drain")
		}
		for _, v := range victims {
			require.NoError(t, s.Exited(later, v, gang.ExitDrained))
		}
		x := s.Schedule(later)
		require.Len(t, x.Admit, 1, "not admitted once its victims %v exited", victims)
		require.Equal(t, "inf", x.Admit[0].ID)
		require.NoError(t, s.CheckInvariants())
	})
}
