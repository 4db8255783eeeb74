package sim

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// sizeWeight is one gang size of a mix and its share of jobs.
type sizeWeight struct {
	gpus   int
	weight float64
}

// trainingSizes is the mix of research gangs by job count: many one-node
// fine-tunes, a long tail up to 512-GPU pre-training runs on one spine.
func trainingSizes() []sizeWeight {
	return []sizeWeight{{8, 30}, {16, 20}, {32, 15}, {64, 15}, {128, 10}, {256, 6}, {512, 4}}
}

// batchSizes is the mix of batch jobs (evals, embeddings, synthetic data).
func batchSizes() []sizeWeight {
	return []sizeWeight{{1, 25}, {2, 15}, {4, 15}, {8, 20}, {16, 12}, {32, 8}, {64, 5}}
}

// mix draws sizes from a size mix capped at max GPUs.
type mix struct {
	sizes []int
	cum   []float64
	mean  float64
}

func newMix(ws []sizeWeight, maxGPUs int) mix {
	var m mix
	total, sum := 0.0, 0.0
	for _, w := range ws {
		if w.gpus > maxGPUs {
			continue
		}
		total += w.weight
		sum += w.weight * float64(w.gpus)
		m.sizes = append(m.sizes, w.gpus)
		m.cum = append(m.cum, total)
	}
	for i := range m.cum {
		m.cum[i] /= total
	}
	m.mean = sum / total
	return m
}

func (m mix) draw(r *rand.Rand) int {
	x := r.Float64()
	for i, c := range m.cum {
		if x < c {
			return m.sizes[i]
		}
	}
	return m.sizes[len(m.sizes)-1]
}

// lognormal draws a duration with the given median and log-sd, clamped.
func lognormal(r *rand.Rand, median time.Duration, sigma float64, lo, hi time.Duration) time.Duration {
	d := time.Duration(float64(median) * math.Exp(sigma*r.NormFloat64()))
	return min(max(d, lo), hi)
}

// Log-sds of the run-time distributions.
const (
	trainingSigma = 0.9
	batchSigma    = 0.7
)

// diurnal is the inference demand shape at hour h of the day, 0 at the
// trough and 1 at the peak: the trough ends at 07:00, demand ramps up for
// a quarter of the busy hours, holds the peak for half and ramps down.
func diurnal(h, troughHours float64) float64 {
	busy := 24 - troughHours
	if busy <= 0 {
		return 0
	}
	ramp, peak := busy/4, busy/2
	x := math.Mod(h-7+24, 24)
	switch {
	case x < ramp:
		return (1 - math.Cos(math.Pi*x/ramp)) / 2
	case x < ramp+peak:
		return 1
	case x < 2*ramp+peak:
		return (1 + math.Cos(math.Pi*(x-ramp-peak)/ramp)) / 2
	}
	return 0
}

// service is one inference service: replicas of tp GPUs serving a share
// of the total demand.
type service struct {
	name     string
	tp       int
	share    float64
	replicas []int32 // jobs, oldest first
	next     int
}

// services returns the inference services: tensor-parallel 8, 4, 2 and 1
// replicas carrying 50, 25, 15 and 10% of the demand, four services each.
func services() []service {
	var out []service
	for _, g := range []struct {
		tp    int
		share float64
	}{{8, 0.50}, {4, 0.25}, {2, 0.15}, {1, 0.10}} {
		for i := range 4 {
			out = append(out, service{name: "svc-tp" + strconv.Itoa(g.tp) + "-" + strconv.Itoa(i), tp: g.tp, share: g.share / 4})
		}
	}
	return out
}

// trainingWorkload is a research gang of gpus GPUs in whole 8-GPU nodes:
// one leaf up to 64 GPUs, one spine above.
func trainingWorkload(id string, gpus int, run, checkpoint time.Duration) gang.Workload {
	w := gang.Workload{
		ID: id, Queue: QueueResearch, PriorityClass: fleet.ClassReservedResearch, Priority: 500,
		Shape:   gang.Training,
		PodSets: []gang.PodSet{{Name: "workers", Count: gpus / 8, GPUsPerPod: 8}},
		Flavor:  "H100",
		Drain:   gang.DrainContract{Preemptible: true, CheckpointInterval: checkpoint},
		// The scheduler books future capacity with it.
		ExpectedRuntime: run,
	}
	switch {
	case gpus > 64:
		w.Topology = gang.TopologyRequest{Required: "spine", Preferred: "leaf"}
	case gpus > 8:
		w.Topology = gang.TopologyRequest{Required: "leaf"}
	}
	return w
}

// batchWorkload is a batch job: one pod up to 8 GPUs, 8-GPU pods above,
// anywhere, preemptible, saving its state every checkpoint interval (0:
// never). The library cannot shrink a running workload yet, so batch is
// not elastic: a drain stops it whole.
func batchWorkload(id string, gpus int, run, checkpoint time.Duration) gang.Workload {
	ps := gang.PodSet{Name: "tasks", Count: 1, GPUsPerPod: gpus}
	if gpus > 8 {
		ps = gang.PodSet{Name: "tasks", Count: gpus / 8, GPUsPerPod: 8}
	}
	return gang.Workload{
		ID: id, Queue: QueueBatch, PriorityClass: fleet.ClassPreemptibleBatch, Priority: 100,
		Shape: gang.Batch, PodSets: []gang.PodSet{ps}, Flavor: "H100",
		Topology:        gang.TopologyRequest{Preferred: "leaf"},
		Drain:           gang.DrainContract{Preemptible: true, CheckpointInterval: checkpoint},
		ExpectedRuntime: run,
	}
}

// inferenceWorkload is one replica of a service: tp GPUs on one node,
// never preempted.
func inferenceWorkload(id string, tp int) gang.Workload {
	return gang.Workload{
		ID: id, Queue: QueueInference, PriorityClass: fleet.ClassProdInference, Priority: 1000,
		Shape: gang.Inference, PodSets: []gang.PodSet{{Name: "replica", Count: 1, GPUsPerPod: tp}}, Flavor: "H100",
	}
}
