package metrics_test

import (
	"fmt"
	"os"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/metrics"
)

// A two-hour review of a 16-GPU fleet: an inference replica that is busy,
// and a training gang that sits idle for its second hour.
func Example() {
	r, err := metrics.New(metrics.Config{})
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	_ = r.ObserveSnapshot(fleet.Snapshot{Time: t0, Fleet: fleet.FleetView{HealthyGPUs: 16, FreeGPUs: 4, StrandedGPUs: 4}})
	_ = r.RecordAll([]fleet.Event{
		{Kind: fleet.EventAdmitted, Time: t0, Workload: "chat-0", Queue: "inference", Shape: gang.Inference, GPUs: 4, Wait: 2 * time.Second},
		{Kind: fleet.EventAdmitted, Time: t0, Workload: "pretrain", Queue: "research", Shape: gang.Training, GPUs: 8, Wait: 20 * time.Minute},
	})
	_ = r.Observe(t0, "chat-0", metrics.Sample{SMActivity: 0.6})
	_ = r.Observe(t0, "pretrain", metrics.Sample{SMActivity: 0.9, MFU: 0.45})
	_ = r.Observe(t0.Add(time.Hour), "pretrain", metrics.Sample{SMActivity: 0})
	_ = r.Observe(t0.Add(2*time.Hour), "chat-0", metrics.Sample{SMActivity: 0.6})

	rep := r.Report(t0, t0.Add(2*time.Hour))
	fmt.Printf("allocation %.0f%%, use of allocated %.0f%%, idle allocated %.0f GPU-h\n",
		100*rep.Fleet.AllocationRate(), 100*rep.Fleet.UseRate(), rep.Fleet.IdleGPUHours)
	_ = metrics.WriteMarkdown(os.Stdout, rep)
	// Output:
	// allocation 75%, use of allocated 50%, idle allocated 8 GPU-h
	// # Fleet utilisation review, 2026-03-01T00:00:00Z to 2026-03-01T02:00:00Z
	//
	// ## Fleet: allocation is not use
	//
	// | healthy GPU-h | allocated GPU-h | allocation rate | used GPU-h (SM) | use rate (sampled) | idle allocated GPU-h |
	// |---:|---:|---:|---:|---:|---:|
	// | 32.0 | 24.0 | 75.0% | 12.0 | 50.0% | 8.0 |
	//
	// ## Allocation and use by team
	//
	// | team | allocated GPU-h | sampled GPU-h | used GPU-h (SM) | use rate | useful PFLOP | idle allocated GPU-h | busy, low-MFU GPU-h |
	// |---|---:|---:|---:|---:|---:|---:|---:|
	// | inference | 8.0 | 8.0 | 4.8 | 60.0% | 0 | 0.0 | 0.0 |
	// | research | 16.0 | 16.0 | 7.2 | 45.0% | 12817 | 8.0 | 0.0 |
	// | fleet | 24.0 | 24.0 | 12.0 | 50.0% | 12817 | 8.0 | 0.0 |
	//
	// ## Allocation and use by shape
	//
	// | shape | allocated GPU-h | sampled GPU-h | used GPU-h (SM) | use rate | useful PFLOP | idle allocated GPU-h | busy, low-MFU GPU-h |
	// |---|---:|---:|---:|---:|---:|---:|---:|
	// | inference | 8.0 | 8.0 | 4.8 | 60.0% | 0 | 0.0 | 0.0 |
	// | training | 16.0 | 16.0 | 7.2 | 45.0% | 12817 | 8.0 | 0.0 |
	// | fleet | 24.0 | 24.0 | 12.0 | 50.0% | 12817 | 8.0 | 0.0 |
	//
	// ## Queue wait by team
	//
	// | team | admitted | p50 | p90 | p99 |
	// |---|---:|---:|---:|---:|
	// | inference | 1 | 2s | 2s | 2s |
	// | research | 1 | 20m0s | 20m0s | 20m0s |
	// | fleet | 2 | 2s | 20m0s | 20m0s |
	//
	// ## Queue wait by gang size
	//
	// | GPUs | admitted | p50 | p90 | p99 |
	// |---|---:|---:|---:|---:|
	// | 1-8 | 2 | 2s | 20m0s | 20m0s |
	// | 9-64 | 0 | - | - | - |
	// | 65-512 | 0 | - | - | - |
	// | 513+ | 0 | - | - | - |
	//
	// ## Preemption tax by team and cause
	//
	// | team | cause | preemptions | killed at deadline | work lost GPU-h | restart GPU-h | lost GPU-h | share of borrowed |
	// |---|---|---:|---:|---:|---:|---:|---:|
	// | fleet | all | 0 | 0 | 0.0 | 0.0 | 0.0 | - |
	//
	// ## Node losses (not preemptions, not in the tax)
	//
	// | team | runs ended | work lost GPU-h | restart GPU-h | lost GPU-h |
	// |---|---:|---:|---:|---:|
	// | fleet | 0 | 0.0 | 0.0 | 0.0 |
	//
	// ## Borrowing and preemption tax
	//
	// | team | borrowed GPU-h | lent GPU-h | preemption lost GPU-h | preemption tax |
	// |---|---:|---:|---:|---:|
	// | inference | 0.0 | 0.0 | 0.0 | - |
	// | research | 0.0 | 0.0 | 0.0 | - |
	// | fleet | 0.0 | 0.0 | 0.0 | - |
	//
	// ## Drains: decision to capacity back
	//
	// | drains | p50 | p99 | deadline misses |
	// |---:|---:|---:|---:|
	// | 0 | - | - | 0 |
	//
	// ## Fragmentation
	//
	// | observed h | healthy GPUs | free GPUs | stranded GPUs | stranded share | stranded p50 | stranded p99 |
	// |---:|---:|---:|---:|---:|---:|---:|
	// | 2.0 | 16.0 | 4.0 | 4.0 | 25.0% | 4.0 | 4.0 |
	//
	// ## Largest free block (whole nodes)
	//
	// | level | average | least | most |
	// |---|---:|---:|---:|
	//
	// ## Gangs crossing spines
	//
	// | team | gangs admitted | GPU-h |
	// |---|---:|---:|
	// | inference | 0 | 0.0 |
	// | research | 0 | 0.0 |
	// | fleet | 0 | 0.0 |
	//
	// ## Cost
	//
	// | team | allocated | idle reservation | recovered by borrowing | per useful PFLOP |
	// |---|---:|---:|---:|---:|
	// | inference | $20.00 | $0.00 | $0.00 | - |
	// | research | $40.00 | $0.00 | $0.00 | $0.0031 |
	// | fleet | $60.00 | $0.00 | $0.00 | $0.0047 |
}
