package placement_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/internal/benchlat"
	"github.com/fleetsched/fleet/internal/packing"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// BenchmarkPlaceOpenb times one pod's placement with the Fragmentation
// ranker on the fleet of the openb node list (1,523 nodes, 6,212 GPUs of
// seven models, 310 without GPUs, cpu and memory on each), after the
// default synthetic mix has requested 100% of its GPUs (about 95% are
// then allocated). The timed pods are the mix's next pods: GPU pods
// (shares and whole GPUs) and CPU-only pods that fit, and apart the pods
// the fleet refuses (most GPU pods at that point); each is observed by
// the ranker before it is placed, as a host does on submission, and
// placed on the same fleet (nothing is applied while timing). Models as
// flavors: every model is a group, as the study's protocol has them.
// cpu-ns/op and cpu-p99-ns are the benchmark thread's CPU time per
// placement (Linux), which load from other work leaves out of the tail
// that p99-ns, by the clock, includes.
func BenchmarkPlaceOpenb(b *testing.B) {
	f, err := packing.Fleet()
	if err != nil {
		b.Fatal(err)
	}
	mix := packing.Mix(packing.Mixes()[0], 1, 20000)
	frag := placement.NewFragmentation()
	p := placement.NewPlacer(placement.Options{Ranker: frag})
	capacity := float64(f.Stats(topology.Root, topology.AllGroups).GPUs) * gang.MilliGPU
	var requested float64
	next := 0
	for ; next < len(mix) && requested < capacity; next++ {
		w := &mix[next]
		requested += float64(w.MilliGPUs())
		frag.Observe(w)
		if a, err := p.Place(f, w); err == nil {
			if err := placement.Apply(f, a); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The next pods, sorted by kind and by whether they fit now: a
	// saturated fleet refuses most GPU pods, and a refusal costs another
	// walk than a placement, so the two are timed apart.
	var gpuPods, cpuPods, refused []*gang.Workload
	for i := next; i < len(mix); i++ {
		w := &mix[i]
		frag.Observe(w)
		switch _, err := p.Place(f, w); {
		case err != nil:
			refused = append(refused, w)
		case w.PodSets[0].NoGPU():
			cpuPods = append(cpuPods, w)
		default:
			gpuPods = append(gpuPods, w)
		}
	}
	for _, c := range []struct {
		name string
		pods []*gang.Workload
	}{{"pod=gpu", gpuPods}, {"pod=cpu-only", cpuPods}, {"pod=refused", refused}} {
		b.Run(c.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, min(b.N, 1<<20))
			cpu := make([]time.Duration, 0, cap(lat))
			// On its own thread, each placement's CPU time is its own.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w := c.pods[i%len(c.pods)]
				frag.Observe(w)
				c0, t0 := benchlat.ThreadCPUTime(), time.Now()
				_, _ = p.Place(f, w)
				if len(lat) < cap(lat) {
					lat = append(lat, time.Since(t0))
					cpu = append(cpu, benchlat.ThreadCPUTime()-c0)
				}
			}
			b.StopTimer()
			benchlat.ReportP99(b, lat)
			benchlat.ReportCPUEach(b, cpu)
		})
	}
}
