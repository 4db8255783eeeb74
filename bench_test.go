package fleet_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/benchlat"
	"github.com/fleetsched/fleet/internal/traces"
	"github.com/fleetsched/fleet/topology"
)

// mixedWork draws one workload of the "mixed" shape: the Philly job-size
// mix for research and batch (whole nodes above 8 GPUs, one pod up to 8),
// and 1-8 GPU inference replicas.
func mixedWork(r *rand.Rand, sizes *traces.Sampler, id string) gang.Workload {
	if r.IntN(4) == 0 {
		return gang.Workload{ID: id, Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
			PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: []int{1, 2, 4, 8}[r.IntN(4)]}}}
	}
	g := sizes.Draw(r)
	w := gang.Workload{ID: id, Queue: "research", PriorityClass: fleet.ClassReservedResearch, Shape: gang.Training,
		Drain: gang.DrainContract{Preemptible: true, CheckpointInterval: 20 * time.Minute}}
	if r.IntN(2) == 0 {
		w.Queue, w.PriorityClass, w.Shape = "batch", fleet.ClassPreemptibleBatch, gang.Batch
	}
	switch {
	case g <= 8:
		w.PodSets = []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: g}}
	case g%8 == 0:
		w.PodSets = []gang.PodSet{{Name: "p", Count: g / 8, GPUsPerPod: 8}}
		w.Topology = gang.TopologyRequest{Required: "spine", Preferred: "leaf"}
	default:
		w.PodSets = []gang.PodSet{{Name: "p", Count: g / 4, GPUsPerPod: 4}}
		w.Topology = gang.TopologyRequest{Required: "spine", Preferred: "leaf"}
	}
	return w
}

// mixedScheduler fills a scheduler to about 85% allocated with the mixed
// shape, seeded.
func mixedScheduler(b *testing.B, gpus int, now time.Time) (*fleet.Scheduler, *rand.Rand, *traces.Sampler) {
	s, err := fleet.New(fleet.ReferenceConfigFor(topology.Scaled(gpus)))
	if err != nil {
		b.Fatal(err)
	}
	r, sizes := fillMixed(b, s, gpus, now)
	return s, r, sizes
}

// fillMixed fills s (of gpus GPUs) to about 85% allocated with the mixed
// stream, seeded, and returns the stream to draw pending work from.
func fillMixed(b *testing.B, s *fleet.Scheduler, gpus int, now time.Time) (*rand.Rand, *traces.Sampler) {
	r := rand.New(rand.NewPCG(42, uint64(gpus)))
	sizes := traces.NewSampler(traces.PhillySizes())
	allocated := 0
	for i := 0; allocated < gpus*85/100; i++ {
		for j := range 64 {
			_ = s.Submit(now, mixedWork(r, sizes, fmt.Sprintf("fill-%d-%d", i, j)))
		}
		for _, a := range s.Schedule(now).Admit {
			for _, p := range a.Pods {
				allocated += p.GPUs
			}
		}
		if i > 10*gpus {
			b.Fatal("could not fill the fleet")
		}
	}
	// Drop what is still pending, so benchmarks start from a clean queue.
	for _, p := range s.Snapshot().Pending {
		_ = s.Cancel(now, p.ID)
	}
	s.Schedule(now)
	return r, sizes
}

// BenchmarkSchedule times one scheduling cycle on the "mixed" shape (about
// 85% allocated): pending=1 submits and admits one inference replica
// (cycle-ns and p99-ns time that alone; ns/op also counts cancelling it
// again); pending=1000 visits a mixed queue of 1,000 workloads (admitting
// what fits).
func BenchmarkSchedule(b *testing.B) {
	for _, gpus := range []int{2048, 16384, 131072} {
		now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		s, r, sizes := mixedScheduler(b, gpus, now)
		b.Run(fmt.Sprintf("gpus=%d/pending=1", gpus), func(b *testing.B) {
			benchOneReplica(b, s, now, "one", func(i int) gang.PodSet {
				return gang.PodSet{Name: "server", Count: 1, GPUsPerPod: 1 + i%8}
			})
		})
		b.Run(fmt.Sprintf("gpus=%d/pending=1000", gpus), func(b *testing.B) {
			benchThousand(b, s, now, r, sizes)
		})
	}
}

// benchOneReplica times the cycle that admits one inference replica of
// pod set ps(i): submit, schedule, check it was admitted; the replica is
// then cancelled (inside ns/op: stopping the timer each iteration costs
// more than what it hides), so every iteration starts from the same state.
func benchOneReplica(b *testing.B, s *fleet.Scheduler, now time.Time, prefix string, ps func(i int) gang.PodSet) {
	lat := make([]time.Duration, 0, min(b.N, 1<<20))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		w := gang.Workload{ID: id, Queue: "prod-inference", PriorityClass: fleet.ClassProdInference, Shape: gang.Inference,
			PodSets: []gang.PodSet{ps(i)}}
		t0 := time.Now()
		if err := s.Submit(now, w); err != nil {
			b.Fatal(err)
		}
		d := s.Schedule(now)
		lat = append(lat, time.Since(t0))
		if len(d.Admit) != 1 {
			b.Fatalf("replica not admitted: %v", d)
		}
		if err := s.Cancel(now, id); err != nil {
			b.Fatal(err)
		}
		s.Schedule(now)
	}
	b.StopTimer()
	reportLatency(b, lat, 1)
}

// benchThousand times one cycle over 1,000 pending workloads drawn from
// the mixed stream (submission outside the timer); every workload is then
// cancelled so each iteration starts from the same state. It fails when a
// cycle admits nothing: a cycle that decides nothing measures nothing.
// Beside the wall-clock figures it reports the cycle's CPU time
// (cpu-ns/op, and its p99 as cpu-p99-ns), which other work on a shared
// machine does not inflate.
func benchThousand(b *testing.B, s *fleet.Scheduler, now time.Time, r *rand.Rand, sizes *traces.Sampler) {
	lat := make([]time.Duration, 0, min(b.N, 1<<20))
	cpu := make([]time.Duration, 0, min(b.N, 1<<20))
	b.ReportAllocs()
	admitted := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var ids []string
		for j := range 1000 {
			w := mixedWork(r, sizes, fmt.Sprintf("q-%d-%d", i, j))
			if s.Submit(now, w) == nil {
				ids = append(ids, w.ID)
			}
		}
		b.StartTimer()
		c0, t0 := benchlat.CPUTime(), time.Now()
		d := s.Schedule(now)
		lat, cpu = append(lat, time.Since(t0)), append(cpu, benchlat.CPUTime()-c0)
		b.StopTimer()
		admitted += len(d.Admit)
		for _, id := range ids {
			_ = s.Cancel(now, id) // admitted or pending: back to the start state
		}
		s.Schedule(now)
		b.StartTimer()
	}
	b.StopTimer()
	if admitted == 0 {
		b.Fatal("no workload admitted")
	}
	b.ReportMetric(float64(admitted)/float64(b.N), "admitted/cycle")
	reportLatency(b, lat, 1000)
	benchlat.ReportCPUEach(b, cpu)
}

// reportLatency reports the mean and p99 of the timed calls and how many
// decisions (workloads considered) per second they sustain.
func reportLatency(b *testing.B, lat []time.Duration, decisions int) {
	if len(lat) == 0 {
		return
	}
	var total time.Duration
	for _, l := range lat {
		total += l
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(len(lat)), "cycle-ns")
	b.ReportMetric(float64(decisions)*float64(len(lat))/total.Seconds(), "decisions/s")
	benchlat.ReportP99(b, lat)
}

// spikeScheduler builds the spike shape at gpus GPUs: inference at about
// 500/2,048 of the fleet (its trough), research at its guarantee and batch
// borrowing what inference lends, so the fleet is full and about 700/2,048
// of it is lent. Then an hour passes and half the jobs checkpoint, so
// victims differ in cost.
func spikeScheduler(b *testing.B, gpus int, now time.Time) (*fleet.Scheduler, map[string]gang.Workload, time.Time) {
	specs := map[string]gang.Workload{}
	s, err := fleet.New(fleet.ReferenceConfigFor(topology.Scaled(gpus)))
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, uint64(gpus)))
	sizes := traces.NewSampler(traces.PhillySizes())
	submit := func(queue string, upTo int) {
		used, misses := 0, 0
		for i := 0; used < upTo && misses < 50; i++ {
			w := mixedWork(r, sizes, fmt.Sprintf("%s-%d", queue, i))
			if queue == "prod-inference" && w.Queue != queue {
				continue
			}
			if queue != "prod-inference" {
				if w.Queue == "prod-inference" {
					continue
				}
				w.Queue = queue
			}
			if s.Submit(now, w) != nil {
				continue
			}
			d := s.Schedule(now)
			if len(d.Admit) == 0 {
				misses++
				_ = s.Cancel(now, w.ID)
				continue
			}
			specs[w.ID] = w
			used += w.GPUs()
		}
	}
	submit("prod-inference", gpus*500/2048)
	submit("research", gpus*848/2048)
	submit("batch", gpus)
	now = now.Add(time.Hour)
	for i, run := range s.Snapshot().Running {
		if run.Queue != "prod-inference" && i%2 == 0 {
			_ = s.Checkpointed(now, run.ID, now.Add(-time.Duration(i%50)*time.Minute))
		}
	}
	return s, specs, now
}

// BenchmarkScheduleSpike times the cycle in which inference jumps while
// the fleet is full and about 700/2,048 of it is lent to research and
// batch: the cycle drains the cheapest borrowed work and nominates its
// GPUs. spike=25x8gpu is the same spike at every size (25 replicas of 8
// GPUs); spike=scaled grows with the fleet (200/2,048 of it, 25 replicas
// at 2,048 GPUs, 1,600 at 131,072), and its ns/replica says whether one
// search serves the whole spike. spike=25x8gpu-warm is the first with
// every eighth node reported warm for the replicas' model: placement and
// the victim search prefer those nodes.
func BenchmarkScheduleSpike(b *testing.B) {
	for _, gpus := range []int{2048, 16384, 131072} {
		for _, spike := range []string{"25x8gpu", "scaled", "25x8gpu-warm"} {
			b.Run(fmt.Sprintf("gpus=%d/spike=%s", gpus, spike), func(b *testing.B) {
				replicas := 25
				if spike == "scaled" {
					replicas = gpus * 200 / 2048 / 8
				}
				benchSpike(b, gpus, replicas, spike == "25x8gpu-warm")
			})
		}
	}
}

// benchSpike times one spike of replicas 8-GPU inference replicas at gpus
// GPUs; each iteration starts from an equally full fleet. With warm, every
// eighth node holds the replicas' model.
func benchSpike(b *testing.B, gpus, replicas int, warm bool) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	s, specs, now := spikeScheduler(b, gpus, start)
	model := ""
	if warm {
		model = "llama-70b"
		for i, n := range topology.Scaled(gpus).Nodes {
			if i%8 == 0 {
				if err := s.SetWarm(now, n.Name, []string{model}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	lat := make([]time.Duration, 0, min(b.N, 1<<20))
	drains := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		now = now.Add(10 * time.Minute)
		var ids []string
		for j := range replicas {
			w := gang.Workload{ID: fmt.Sprintf("spike-%d-%d", i, j), Queue: "prod-inference", PriorityClass: fleet.ClassProdInference,
				Shape: gang.Inference, Model: model, PodSets: []gang.PodSet{{Name: "server", Count: 1, GPUsPerPod: 8}}}
			if err := s.Submit(now, w); err != nil {
				b.Fatal(err)
			}
			ids = append(ids, w.ID)
		}
		b.StartTimer()
		t0 := time.Now()
		d := s.Schedule(now)
		lat = append(lat, time.Since(t0))
		b.StopTimer()
		if len(d.Drain) == 0 {
			b.Fatalf("the spike drained nothing: %d admitted", len(d.Admit))
		}
		drains += len(d.Drain)
		// Back to the start state: the replicas leave, the victims
		// leave and come back as new jobs of the same shapes.
		for _, x := range d.Drain {
			if err := s.Exited(now, x.ID, gang.ExitDrained); err != nil {
				b.Fatal(err)
			}
		}
		for _, id := range ids {
			_ = s.Cancel(now, id)
		}
		refill(b, s, specs, now, d.Drain, i)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(drains)/float64(b.N), "victims/cycle")
	var total time.Duration
	for _, l := range lat {
		total += l
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(len(lat)*replicas), "ns/replica")
	reportLatency(b, lat, replicas)
}

// refill resubmits the drained victims' workloads under new names, so that
// the next iteration starts from a fleet as full, with work of the same
// shapes.
func refill(b *testing.B, s *fleet.Scheduler, specs map[string]gang.Workload, now time.Time, drained []fleet.Drain, iter int) {
	for j, x := range drained {
		w, ok := specs[x.ID]
		if !ok {
			b.Fatalf("unknown victim %s", x.ID)
		}
		w.ID = fmt.Sprintf("refill-%d-%d", iter, j)
		if err := s.Submit(now, w); err != nil {
			b.Fatal(err)
		}
		specs[w.ID] = w
	}
	s.Schedule(now)
}

// BenchmarkDefragment times planning to open one whole spine on a fleet
// where every node holds one small job that checkpoints (1-3 GPUs, about a
// quarter of the fleet allocated, so every spine's work has room
// elsewhere): the plan moves every job out of the cheapest spine (64 moves
// at 2,048 GPUs, 512 at 131,072, where a spine has 4,096 GPUs). The
// reference shapes cannot time a plan that succeeds: opening a spine
// moves its allocated GPUs into the free GPUs of the other spines, so it
// needs a spine's worth of free GPUs in the fleet (512 of 2,048), and the
// mixed shape has about 300, with inference replicas, which never move,
// on every spine; the fragmented shape's last spine is empty already (a
// plan of no moves). cpu-ns/op is the CPU time of one plan, steadier than
// ns/op and p99-ns on a shared machine.
//
// open=512-in-spine times the same decision at every size: room for one
// 512-GPU gang under one spine (a whole spine at 2,048 GPUs, 64 of a
// spine's 512 nodes at 131,072), so it moves about 64 jobs at each.
func BenchmarkDefragment(b *testing.B) {
	for _, gpus := range []int{2048, 16384, 131072} {
		for _, c := range []struct {
			open string
			want int
		}{{"spine", 0}, {"512-in-spine", 512}} {
			b.Run(fmt.Sprintf("gpus=%d/open=%s", gpus, c.open), func(b *testing.B) {
				benchDefragment(b, gpus, c.want)
			})
		}
	}
}

func benchDefragment(b *testing.B, gpus, want int) {
	s, err := fleet.New(fleet.ReferenceConfigFor(topology.Scaled(gpus)))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(11, uint64(gpus)))
	for i, n := range topology.Scaled(gpus).Nodes {
		g := 1 + r.IntN(3)
		w := gang.Workload{ID: fmt.Sprintf("small-%d", i), Queue: "research", PriorityClass: fleet.ClassReservedResearch,
			Shape: gang.Batch, PodSets: []gang.PodSet{{Name: "p", Count: 1, GPUsPerPod: g}},
			Drain: gang.DrainContract{Preemptible: true, CheckpointInterval: 10 * time.Minute}}
		if err := s.Adopt(now, fleet.Adoption{Workload: w, Started: now.Add(-time.Duration(r.IntN(60)) * time.Minute), Pods: []fleet.PodAssignment{{PodSet: "p", Node: n.Name, GPUs: g}}}); err != nil {
			b.Fatal(err)
		}
	}
	now = now.Add(time.Hour)
	plan, err := s.PlanDefrag(now, "spine", "H100", want, 1000)
	if err != nil || len(plan.Moves) == 0 {
		b.Fatalf("no plan to open a spine: %v", err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchlat.CPUTime()
	for range b.N {
		t0 := time.Now()
		if _, err := s.PlanDefrag(now, "spine", "H100", want, 1000); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	benchlat.ReportCPU(b, cpu)
	b.ReportMetric(float64(len(plan.Moves)), "moves")
	benchlat.ReportP99(b, lat)
}
