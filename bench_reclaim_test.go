package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// BenchmarkScheduleReclaimShared: the reference fleet full at the
// inference trough: research holds its 848 GPUs and inference 500, whole
// and not preemptible, and batch borrows the 700 GPUs inference lends as
// pairs of half-GPU pods (two to a GPU); inference, under its nominal
// quota, asks for one whole GPU. The cycle finds
// no whole-GPU plan, reclaims one batch workload's GPU of shares and
// drains it. Each op is that cycle; putting the fleet back (the replica
// cancelled, the victim gone, a new pair of shares admitted) is outside
// the timer.
func BenchmarkScheduleReclaimShared(b *testing.B) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	s, err := fleet.New(fleet.ReferenceConfigFor(topology.Scaled(2048)))
	if err != nil {
		b.Fatal(err)
	}
	pair := func(id string) gang.Workload {
		return gang.Workload{ID: id, Queue: "batch", PriorityClass: fleet.ClassPreemptibleBatch, Shape: gang.Batch,
			PodSets: []gang.PodSet{{Name: "p", Count: 2, GPUShare: 500}}, Drain: gang.DrainContract{Preemptible: true}}
	}
	// Research holds its 848 GPUs and inference 500 of its 1,200, whole
	// and not preemptible; batch borrows the 700 inference lends.
	for i := range 848 / 8 {
		if err := s.Submit(now, gang.Workload{ID: fmt.Sprintf("research-%d", i), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
			Shape: gang.Training, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 8}}}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 500 {
		if err := s.Submit(now, gang.Workload{ID: fmt.Sprintf("inference-%d", i), Queue: "prod-inference", PriorityClass: fleet.ClassProdInference,
			Shape: gang.Inference, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: 1}}}); err != nil {
			b.Fatal(err)
		}
	}
	s.Schedule(now)
	fillers := 0
	for admitted := true; admitted; {
		for range 64 {
			if err := s.Submit(now, pair(fmt.Sprintf("batch-%d", fillers))); err != nil {
				b.Fatal(err)
			}
			fillers++
		}
		admitted = len(s.Schedule(now).Admit) == 64
	}
	// Nothing pending but what the benchmark submits.
	for _, p := range s.Snapshot().Pending {
		if err := s.Cancel(now, p.ID); err != nil {
			b.Fatal(err)
		}
	}
	if snap := s.Snapshot(); snap.Fleet.AllocatedGPUs != snap.Fleet.GPUs {
		b.Fatalf("fleet not full: %d of %d GPUs allocated", snap.Fleet.AllocatedGPUs, snap.Fleet.GPUs)
	}
	lat := make([]time.Duration, 0, min(b.N, 1<<20))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(2 * time.Minute)
		id := fmt.Sprintf("inf-%d", i)
		if err := s.Submit(now, gang.Workload{ID: id, Queue: "prod-inference", PriorityClass: fleet.ClassProdInference,
			Shape: gang.Inference, PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: 1}}}); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		d := s.Schedule(now)
		lat = append(lat, time.Since(t0))
		b.StopTimer()
		if len(d.Drain) != 1 || len(d.Admit) != 0 {
			b.Fatalf("want one victim, got %d drains and %d admissions", len(d.Drain), len(d.Admit))
		}
		if err := s.Cancel(now, id); err != nil {
			b.Fatal(err)
		}
		if err := s.Exited(now, d.Drain[0].ID, gang.ExitDrained); err != nil {
			b.Fatal(err)
		}
		if err := s.Submit(now, pair(fmt.Sprintf("batch-%d", fillers))); err != nil {
			b.Fatal(err)
		}
		fillers++
		if len(s.Schedule(now).Admit) != 1 {
			b.Fatal("the freed GPU did not take a new pair of shares")
		}
		b.StartTimer()
	}
	b.StopTimer()
	reportLatency(b, lat, 1)
}
