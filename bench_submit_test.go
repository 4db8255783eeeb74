package fleet_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// manyPodSets is a research workload of n one-GPU pod sets, each with a
// resource, on one pool: the shape whose validation must stay linear.
func manyPodSets(id string, n int) gang.Workload {
	w := gang.Workload{ID: id, Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
		PodSets: make([]gang.PodSet, n)}
	for i := range w.PodSets {
		w.PodSets[i] = gang.PodSet{Name: "ps-" + strconv.Itoa(i), Count: 1, GPUsPerPod: 1}
	}
	return w
}

// BenchmarkSubmitValidation submits (and cancels) one workload of many pod
// sets on the 131,072-GPU fleet: the cost is Submit's validation and
// resolution, which must grow linearly with the pod sets.
func BenchmarkSubmitValidation(b *testing.B) {
	s, err := fleet.New(fleet.ReferenceConfigFor(topology.Scaled(131072)))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []int{1000, 10000, 40000} {
		w := manyPodSets("wide", n)
		b.Run("podsets="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Submit(now, w); err != nil {
					b.Fatal(err)
				}
				if err := s.Cancel(now, w.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
