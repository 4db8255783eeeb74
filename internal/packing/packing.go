// Package packing replays a GPU-sharing workload mix on a heterogeneous
// fleet under the protocol of the fragmentation study of USENIX ATC'23
// ("Beware of Fragmentation"): pods arrive one by one and never finish,
// until the GPUs requested reach 130% of the fleet's capacity; the figure
// of merit is the share of GPU capacity allocated. It compares the fleet
// Placer with its Fragmentation ranker against FirstFit, BestFit and
// Random baselines run on the same fleet and the same arrivals.
package packing

import (
	"fmt"
	"math/rand/v2"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// Model is one GPU model of the synthetic fleet.
type Model struct {
	Name  string
	GPUs  []int // GPUs per node, drawn uniformly
	Nodes int
	CPU   int64 // millicores per node
	Mem   int64 // GiB per node
}

// Models is the synthetic heterogeneous fleet: six GPU models on nodes of
// 1 to 8 GPUs, about 1,200 GPU nodes, plus CPU-only nodes. Its shape
// follows the public trace of the study (many 8-GPU nodes of two models,
// many 1-2 GPU inference nodes), not its exact counts.
func Models() []Model {
	return []Model{
		{"V100", []int{8}, 200, 96000, 512},
		{"A100", []int{8}, 60, 128000, 1024},
		{"G3", []int{4}, 100, 96000, 384},
		{"P100", []int{2}, 150, 64000, 256},
		{"T4", []int{1, 2}, 300, 96000, 384},
		{"A10", []int{1}, 390, 128000, 512},
		{"", []int{0}, 150, 96000, 512},
	}
}

// Fleet builds the synthetic fleet: racks of 20 nodes.
func Fleet() (*topology.Fleet, error) {
	r := rand.New(rand.NewPCG(7, 7))
	var spec topology.Spec
	spec.Levels = []string{"rack", "node"}
	i := 0
	for _, m := range Models() {
		for range m.Nodes {
			g := m.GPUs[r.IntN(len(m.GPUs))]
			spec.Nodes = append(spec.Nodes, topology.NodeSpec{
				Name: fmt.Sprintf("n%04d", i), Path: []string{fmt.Sprintf("r%03d", i/20)},
				GPUs: g, Flavor: m.Name,
				Resources: map[string]int64{"cpu": m.CPU, "memory": m.Mem << 30},
			})
			i++
		}
	}
	return topology.New(spec)
}

// Mix draws the synthetic pod stream. Its shape, as in the study's trace:
//   - 13% ask for no GPU: 4-64 cores, 4 GiB per core;
//   - 38% ask for a share of one GPU: 100-900 thousandths (more small
//     than large), 2-16 cores;
//   - 49% ask for whole GPUs: 1 GPU (78%), 2 (10%), 4 (6%), 8 (6%), with
//     6-16 cores and 16-64 GiB per GPU;
//   - one GPU pod in ten accepts only one or two models (V100/A100 for
//     8-GPU pods, T4/A10 for shares), the rest any model.
//
// The mix is not fitted to any trace: it only has the trace's proportions.
func Mix(seed uint64, n int) []gang.Workload {
	r := rand.New(rand.NewPCG(seed, 0x9ac))
	out := make([]gang.Workload, 0, n)
	for i := range n {
		w := gang.Workload{ID: fmt.Sprintf("p%d", i), Queue: "q", Shape: gang.Batch}
		ps := gang.PodSet{Name: "p", Count: 1}
		var cores int64
		switch x := r.Float64(); {
		case x < 0.13:
			cores = []int64{4, 8, 16, 32, 64}[r.IntN(5)]
			ps.Resources = []gang.Resource{{Name: "cpu", Amount: cores * 1000}, {Name: "memory", Amount: cores * 4 << 30}}
		case x < 0.51:
			ps.GPUShare = []int{100, 100, 200, 250, 250, 300, 400, 500, 500, 600, 750, 900}[r.IntN(12)]
			cores = []int64{2, 4, 8, 8, 12, 16}[r.IntN(6)]
			ps.Resources = []gang.Resource{{Name: "cpu", Amount: cores * 1000}, {Name: "memory", Amount: 16 << 30}}
			if r.IntN(10) == 0 {
				w.Flavors = []string{"T4", "A10"}
			}
		default:
			k := 1
			switch y := r.Float64(); {
			case y < 0.06:
				k = 8
			case y < 0.12:
				k = 4
			case y < 0.22:
				k = 2
			}
			ps.GPUsPerPod = k
			cores = int64(k) * (6 + int64(r.IntN(11)))
			ps.Resources = []gang.Resource{{Name: "cpu", Amount: cores * 1000}, {Name: "memory", Amount: int64(k) * int64(16+16*r.IntN(4)) << 30}}
			if r.IntN(10) == 0 && k == 8 {
				w.Flavors = []string{"V100", "A100"}
			}
		}
		w.PodSets = []gang.PodSet{ps}
		out = append(out, w)
	}
	return out
}

// Policy places one pod on f, or reports that it does not fit. It applies
// what it chose.
type Policy interface {
	Name() string
	Place(f *topology.Fleet, w *gang.Workload) bool
}

// Row is one policy's allocated share of GPU capacity, in percent, at
// each requested level of Levels.
type Row struct {
	Policy    string
	Allocated []float64
}

// Levels are the requested shares of GPU capacity the table reports at.
func Levels() []float64 { return []float64{1.0, 1.1, 1.2, 1.3} }

// Run replays the mix on a fresh fleet under policy p until the GPUs
// requested reach the last level, recording the allocated share at each.
func Run(p Policy, mix []gang.Workload) (Row, error) {
	f, err := Fleet()
	if err != nil {
		return Row{}, err
	}
	capacity := float64(f.Stats(topology.Root, topology.AllGroups).GPUs) * gang.MilliGPU
	row := Row{Policy: p.Name()}
	levels := Levels()
	var requested float64
	for i := range mix {
		w := &mix[i]
		requested += float64(w.MilliGPUs())
		p.Place(f, w)
		for len(row.Allocated) < len(levels) && requested >= levels[len(row.Allocated)]*capacity {
			row.Allocated = append(row.Allocated, 100*float64(f.MilliAllocated(topology.Root, topology.AllGroups))/capacity)
		}
		if len(row.Allocated) == len(levels) {
			return row, nil
		}
	}
	return row, fmt.Errorf("packing: the mix of %d pods requests less than %.0f%% of capacity", len(mix), 100*levels[len(levels)-1])
}

// Fleet policy: the Placer with the Fragmentation ranker, which learns
// the mix from the pods it has seen.
type fleetPolicy struct {
	p    *placement.Placer
	frag *placement.Fragmentation
}

// NewFleetPolicy returns the fleet's built-in policy.
func NewFleetPolicy() Policy {
	fr := placement.NewFragmentation()
	return &fleetPolicy{p: placement.NewPlacer(placement.Options{Ranker: fr}), frag: fr}
}

func (p *fleetPolicy) Name() string { return "fleet" }

func (p *fleetPolicy) Place(f *topology.Fleet, w *gang.Workload) bool {
	p.frag.Observe(w)
	a, err := p.p.Place(f, w)
	if err != nil {
		return false
	}
	if err := placement.Apply(f, a); err != nil {
		panic(err)
	}
	return true
}
