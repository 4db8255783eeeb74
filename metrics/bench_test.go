package metrics_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/metrics"
)

// The reference fleet: 2,048 GPUs, here as 256 slots of one 8-GPU workload.
const (
	refGPUs  = 2048
	refSlots = refGPUs / 8
)

var refTeams = [...]string{"inference", "research", "evals", "notebooks"}

// refStream produces, one at a time, a steady stream over the reference
// fleet: every slot cycles admit, checkpoint, exit, each event step apart.
type refStream struct {
	ids  []string
	rng  *rand.Rand
	i    int
	step time.Duration
}

func newRefStream(step time.Duration) *refStream {
	ids := make([]string, refSlots)
	for i := range ids {
		ids[i] = fmt.Sprintf("w%03d", i)
	}
	return &refStream{ids: ids, rng: rand.New(rand.NewPCG(1, 2)), step: step}
}

func (s *refStream) next() fleet.Event {
	slot, phase := s.i%refSlots, (s.i/refSlots)%3
	e := fleet.Event{Time: t0.Add(time.Duration(s.i) * s.step), Workload: s.ids[slot], Queue: refTeams[slot%len(refTeams)]}
	s.i++
	switch phase {
	case 0:
		e.Kind, e.Shape, e.GPUs = fleet.EventAdmitted, gang.Shape(1+slot%3), 8
		e.Wait = time.Duration(s.rng.IntN(3600)) * time.Second
		if slot%4 == 1 {
			e.Borrowing, e.BorrowedGPUs = true, 8
		}
	case 1:
		e.Kind = fleet.EventCheckpointed
	default:
		e.Kind, e.Exit = fleet.EventExited, gang.ExitFinished
	}
	return e
}

// p99 times each iteration into a slice; it reports the 99th percentile.
type p99 struct{ ns []int64 }

func (p *p99) time(start time.Time) { p.ns = append(p.ns, time.Since(start).Nanoseconds()) }

func (p *p99) report(b *testing.B) {
	if len(p.ns) == 0 {
		return
	}
	slices.Sort(p.ns)
	b.ReportMetric(float64(p.ns[len(p.ns)*99/100]), "p99-ns")
}

func BenchmarkRecord(b *testing.B) {
	b.Run(fmt.Sprintf("gpus=%d", refGPUs), func(b *testing.B) {
		r, err := metrics.New(metrics.Config{})
		if err != nil {
			b.Fatal(err)
		}
		s := newRefStream(time.Second)
		for range 3 * refSlots * 4 { // warm up: every slot, bucket and sketch bin in use
			if err := r.Record(s.next()); err != nil {
				b.Fatal(err)
			}
		}
		events := make([]fleet.Event, b.N)
		for i := range events {
			events[i] = s.next()
		}
		lat := p99{ns: make([]int64, 0, b.N)}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			t := time.Now()
			if err := r.Record(events[i]); err != nil {
				b.Fatal(err)
			}
			lat.time(t)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		lat.report(b)
	})
}

// BenchmarkRecordMemory records a stream over the same week at two
// densities: the heap after recording depends on the live workloads and
// the week's buckets, not on the number of events.
func BenchmarkRecordMemory(b *testing.B) {
	const span = 7 * 24 * time.Hour
	for _, n := range []int{100_000, 300_000, 1_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var heap uint64
			for range b.N {
				r, err := metrics.New(metrics.Config{})
				if err != nil {
					b.Fatal(err)
				}
				s := newRefStream(span / time.Duration(n))
				for range n {
					if err := r.Record(s.next()); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				heap = m.HeapAlloc
				runtime.KeepAlive(r)
				b.StartTimer()
			}
			b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
		})
	}
}

// monthOfReferenceFleet records 30 days of the reference fleet: the
// steady stream one event a second, a snapshot every 5 minutes and a
// usage sample per running workload every 30 minutes.
func monthOfReferenceFleet(b *testing.B) *metrics.Recorder {
	r, err := metrics.New(metrics.Config{IdleLimits: map[string]time.Duration{"notebook": 2 * time.Hour}})
	if err != nil {
		b.Fatal(err)
	}
	s := newRefStream(time.Second)
	rng := rand.New(rand.NewPCG(3, 4))
	end := t0.Add(30 * 24 * time.Hour)
	running := map[string]bool{}
	nextSnap, nextSample := t0, t0
	for {
		e := s.next()
		if !e.Time.Before(end) {
			break
		}
		for !nextSnap.After(e.Time) {
			free := refGPUs - 8*len(running)
			if err := r.ObserveSnapshot(fleet.Snapshot{Time: nextSnap, Fleet: fleet.FleetView{
				GPUs: refGPUs, HealthyGPUs: refGPUs, FreeGPUs: free, StrandedGPUs: rng.IntN(64),
				LargestFreeBlock: []fleet.LevelBlock{{Level: "spine", Nodes: free / 8 / 4}, {Level: "leaf", Nodes: min(8, free/8)}},
			}}); err != nil {
				b.Fatal(err)
			}
			nextSnap = nextSnap.Add(5 * time.Minute)
		}
		if !nextSample.After(e.Time) {
			for _, id := range s.ids {
				if running[id] {
					if err := r.Observe(nextSample, id, metrics.Sample{SMActivity: rng.Float64(), MFU: 0.5 * rng.Float64()}); err != nil {
						b.Fatal(err)
					}
				}
			}
			nextSample = nextSample.Add(30 * time.Minute)
		}
		if err := r.Record(e); err != nil {
			b.Fatal(err)
		}
		switch e.Kind {
		case fleet.EventAdmitted:
			running[e.Workload] = true
		case fleet.EventExited:
			delete(running, e.Workload)
		}
	}
	return r
}

func BenchmarkReport(b *testing.B) {
	b.Run(fmt.Sprintf("gpus=%d/days=30", refGPUs), func(b *testing.B) {
		r := monthOfReferenceFleet(b)
		lat := p99{ns: make([]int64, 0, b.N)}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			t := time.Now()
			rep := r.Report(t0, t0.Add(30*24*time.Hour))
			lat.time(t)
			if len(rep.Hourly) != 720 {
				b.Fatalf("%d hours", len(rep.Hourly))
			}
		}
		lat.report(b)
	})
}
