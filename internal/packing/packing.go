// Package packing replays GPU-sharing workload mixes on a heterogeneous
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
	"strings"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// NodeShape is one kind of node of the fleet, and how many there are.
type NodeShape struct {
	Model string // GPU model; "" for CPU-only nodes
	GPUs  int
	Cores int64 // CPU cores
	MemGi int64 // GiB of memory
	Nodes int
}

// Shapes is the heterogeneous fleet the table replays on. Its node kinds
// and counts are those of the public node list of the fragmentation
// study (Alibaba cluster-trace-gpu-v2023, openb_node_list_all_node.csv:
// 1,523 nodes, 6,212 GPUs of seven models; kinds of fewer than two nodes
// left out), rounded to whole GiB. Only the shape of the fleet is taken:
// the pods are synthetic (see Mix).
func Shapes() []NodeShape {
	return []NodeShape{
		{"G2", 8, 96, 384, 549},
		{"T4", 2, 104, 512, 387},
		{"P100", 2, 16, 120, 107},
		{"G3", 8, 128, 768, 39},
		{"V100M16", 4, 32, 128, 28},
		{"P100", 2, 64, 256, 22},
		{"V100M32", 8, 96, 768, 21},
		{"V100M16", 1, 8, 32, 19},
		{"T4", 4, 96, 384, 17},
		{"V100M32", 4, 48, 368, 9},
		{"V100M16", 8, 64, 256, 7},
		{"P100", 1, 8, 60, 3},
		{"P100", 2, 8, 60, 2},
		{"A10", 1, 128, 1024, 2},
		{"", 0, 32, 256, 129},
		{"", 0, 96, 512, 59},
		{"", 0, 96, 384, 30},
		{"", 0, 32, 128, 23},
		{"", 0, 64, 512, 22},
		{"", 0, 104, 512, 20},
		{"", 0, 32, 64, 10},
		{"", 0, 64, 256, 8},
		{"", 0, 64, 128, 4},
		{"", 0, 104, 768, 3},
	}
}

// Fleet builds the fleet of Shapes, kinds interleaved in racks of 20
// nodes so that node order favours no kind.
func Fleet() (*topology.Fleet, error) {
	var spec topology.Spec
	spec.Levels = []string{"rack", "node"}
	left := make([]int, 0, 32)
	for _, s := range Shapes() {
		left = append(left, s.Nodes)
	}
	shapes := Shapes()
	for i := 0; ; {
		added := false
		for k, s := range shapes {
			if left[k] == 0 {
				continue
			}
			left[k]--
			added = true
			spec.Nodes = append(spec.Nodes, topology.NodeSpec{
				Name: fmt.Sprintf("n%04d", i), Path: []string{fmt.Sprintf("r%03d", i/20)},
				GPUs: s.GPUs, Flavor: s.Model,
				Resources: map[string]int64{"cpu": s.Cores * 1000, "memory": s.MemGi << 30},
			})
			i++
		}
		if !added {
			return topology.New(spec)
		}
	}
}

// MixSpec is a workload mix: the share of pods of each form, and how
// many GPU pods accept only some models.
type MixSpec struct {
	Name string
	// CPUOnly, Share, Multi are the shares of pods that ask for no GPU,
	// for part of one GPU, and for 2, 4 or 8 whole GPUs; the rest ask
	// for one whole GPU.
	CPUOnly, Share, Multi float64
	// Constrained is the share of GPU pods that accept only one model
	// family (a model drawn by the fleet's GPUs).
	Constrained float64
}

// Mixes are the mixes the table is checked on. "default" has the
// proportions of the study's pod list (openb_pod_list_default.csv: 13%
// no GPU, 38% a share, 48% one GPU, under 1% several); the others follow
// the study's own variants of it, each stressing one form: more shares,
// more multi-GPU pods, more CPU-only pods, a third of GPU pods bound to
// one model (its "gpuspec33").
func Mixes() []MixSpec {
	return []MixSpec{
		{Name: "default", CPUOnly: 0.13, Share: 0.38, Multi: 0.01},
		{Name: "share60", CPUOnly: 0.13, Share: 0.52, Multi: 0.01},
		{Name: "multi20", CPUOnly: 0.13, Share: 0.33, Multi: 0.11},
		{Name: "cpu30", CPUOnly: 0.30, Share: 0.31, Multi: 0.01},
		{Name: "spec33", CPUOnly: 0.13, Share: 0.38, Multi: 0.01, Constrained: 0.33},
	}
}

// pick draws from values with the given weights.
func pick[T any](r *rand.Rand, values []T, weights []int) T {
	total := 0
	for _, w := range weights {
		total += w
	}
	x := r.IntN(total)
	for i, w := range weights {
		if x < w {
			return values[i]
		}
		x -= w
	}
	return values[len(values)-1]
}

// Mix draws n pods of mix m. The sizes are synthetic, drawn from the
// distributions of the study's pod list rounded to a few values, so no
// pod of the trace is copied:
//   - a share of one GPU: 100-800 thousandths, most often 450 or 800
//     (two of them, or one, per GPU, leaving 100-200 that only the rarer
//     small shares can use), 3-12 cores;
//   - one whole GPU: 4-19 cores, most often 11-12; several: 2 (36%), 4
//     (32%) or 8 (32%) GPUs at 8-11 cores each;
//   - no GPU: 8-32 cores;
//   - memory: 4 GiB per core.
//
// A constrained pod accepts one model family (G2, T4, P100, or the two
// V100s), drawn by the family's GPUs in the fleet.
func Mix(m MixSpec, seed uint64, n int) []gang.Workload {
	r := rand.New(rand.NewPCG(seed, 0x9ac))
	families := [][]string{{"G2"}, {"T4"}, {"P100"}, {"V100M16", "V100M32"}, {"G3"}}
	familyGPUs := []int{4392, 842, 265, 391, 312}
	out := make([]gang.Workload, 0, n)
	for i := range n {
		w := gang.Workload{ID: fmt.Sprintf("p%d", i), Queue: "q", Shape: gang.Batch}
		ps := gang.PodSet{Name: "p", Count: 1}
		var cores int64
		switch x := r.Float64(); {
		case x < m.CPUOnly:
			cores = pick(r, []int64{8, 12, 16, 32}, []int{2, 4, 2, 3})
		case x < m.CPUOnly+m.Share:
			ps.GPUShare = pick(r, []int{100, 200, 300, 450, 550, 650, 800}, []int{1, 2, 4, 9, 1, 3, 11})
			cores = pick(r, []int64{3, 4, 6, 8, 12}, []int{11, 7, 1, 5, 6})
		case x < m.CPUOnly+m.Share+m.Multi:
			ps.GPUsPerPod = pick(r, []int{2, 4, 8}, []int{36, 32, 32})
			cores = int64(ps.GPUsPerPod) * (8 + int64(r.IntN(4)))
		default:
			ps.GPUsPerPod = 1
			cores = pick(r, []int64{4, 8, 10, 11, 12, 16, 19}, []int{6, 2, 2, 15, 5, 3, 3})
		}
		ps.Resources = []gang.Resource{{Name: "cpu", Amount: cores * 1000}, {Name: "memory", Amount: cores * 4 << 30}}
		if !ps.NoGPU() && r.Float64() < m.Constrained {
			w.Flavors = pick(r, families, familyGPUs)
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

// Compare replays n pods of mix m, drawn with seed, under the fleet's
// policy and the three baselines (Random drawing with the same seed), in
// the rows fleet, bestfit, firstfit, random.
func Compare(m MixSpec, seed uint64, n int) ([]Row, error) {
	mix := Mix(m, seed, n)
	var rows []Row
	for _, p := range []Policy{NewFleetPolicy(), NewBestFit(), NewFirstFit(), NewRandom(seed)} {
		row, err := Run(p, mix)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// Table renders rows as the allocated share of GPU capacity at each
// requested level.
func Table(rows []Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s", "requested")
	for _, l := range Levels() {
		fmt.Fprintf(&b, " %6.0f%%", 100*l)
	}
	b.WriteString("\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-9s", r.Policy)
		for _, a := range r.Allocated {
			fmt.Fprintf(&b, " %6.2f%%", a)
		}
		b.WriteString("\n")
	}
	return b.String()
}
