package packing

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// The openb trace (Alibaba cluster-trace-gpu-v2023, the study's own pod
// and node lists) is read from a folder the caller names: its licence
// allows research use, so the files are never part of this module.
const (
	OpenbNodes = "openb_node_list_all_node.csv"
	OpenbPods  = "openb_pod_list_default.csv"
)

// ReadOpenbNodes reads a node list (sn, cpu_milli, memory_mib, gpu,
// model) into a fleet spec: racks of 20 nodes in list order, each
// node's GPU model as its flavor (CPU-only nodes have none) unless
// oneGroup puts every node in one, cpu in millicores and memory in MiB.
func ReadOpenbNodes(r io.Reader, oneGroup bool) (topology.Spec, error) {
	rows, err := readRows(r, []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"})
	if err != nil {
		return topology.Spec{}, err
	}
	spec := topology.Spec{Levels: []string{"rack", "node"}}
	for i, row := range rows {
		var v [3]int64
		for j := range v {
			if v[j], err = strconv.ParseInt(row[j+1], 10, 64); err != nil || v[j] < 0 {
				return topology.Spec{}, fmt.Errorf("packing: node list row %d: %q is not a count", i+2, row[j+1])
			}
		}
		model := row[4]
		if oneGroup {
			model = ""
		}
		spec.Nodes = append(spec.Nodes, topology.NodeSpec{Name: row[0], Path: []string{fmt.Sprintf("r%03d", i/20)},
			GPUs: int(v[2]), Flavor: model, Resources: map[string]int64{"cpu": v[0], "memory": v[1]}})
	}
	return spec, nil
}

// ReadOpenbPods reads a pod list (name, cpu_milli, memory_mib, num_gpu,
// gpu_milli, gpu_spec, ...) into one-pod workloads: a share of one GPU
// when num_gpu is 1 and gpu_milli under 1000, else num_gpu whole GPUs;
// cpu and memory when not zero; gpu_spec's models (deduplicated) as the
// accepted flavors unless anyModel. A pod asking for nothing is skipped.
func ReadOpenbPods(r io.Reader, anyModel bool) ([]gang.Workload, error) {
	rows, err := readRows(r, []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"})
	if err != nil {
		return nil, err
	}
	var out []gang.Workload
	for i, row := range rows {
		var v [4]int64
		for j := range v {
			if v[j], err = strconv.ParseInt(row[j+1], 10, 64); err != nil || v[j] < 0 {
				return nil, fmt.Errorf("packing: pod list row %d: %q is not a count", i+2, row[j+1])
			}
		}
		ps := gang.PodSet{Name: "p", Count: 1}
		switch gpus, milli := v[2], v[3]; {
		case gpus == 1 && milli < gang.MilliGPU && milli > 0:
			ps.GPUShare = int(milli)
		case gpus >= 1:
			ps.GPUsPerPod = int(gpus)
		}
		for j, name := range []string{"cpu", "memory"} {
			if v[j] > 0 {
				ps.Resources = append(ps.Resources, gang.Resource{Name: name, Amount: v[j]})
			}
		}
		if ps.NoGPU() && len(ps.Resources) == 0 {
			continue
		}
		w := gang.Workload{ID: row[0], Queue: "q", Shape: gang.Batch, PodSets: []gang.PodSet{ps}}
		if !anyModel && row[5] != "" {
			for _, m := range strings.Split(row[5], "|") {
				if m != "" && !slices.Contains(w.Flavors, m) {
					w.Flavors = append(w.Flavors, m)
				}
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// readRows reads a CSV whose header starts with the columns want.
func readRows(r io.Reader, want []string) ([][]string, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("packing: %w", err)
	}
	if len(rows) == 0 || len(rows[0]) < len(want) || !slices.Equal(rows[0][:len(want)], want) {
		return nil, fmt.Errorf("packing: the header must start with %s", strings.Join(want, ","))
	}
	for i, row := range rows[1:] {
		if len(row) < len(want) {
			return nil, fmt.Errorf("packing: row %d has %d columns, want %d", i+2, len(row), len(want))
		}
	}
	return rows[1:], nil
}

// ReadOpenb reads the trace's default pod list and full node list from
// folder dir (see ReadOpenbNodes and ReadOpenbPods).
func ReadOpenb(dir string, oneGroup bool) (topology.Spec, []gang.Workload, error) {
	nf, err := os.Open(filepath.Join(dir, OpenbNodes))
	if err != nil {
		return topology.Spec{}, nil, err
	}
	defer nf.Close()
	spec, err := ReadOpenbNodes(nf, oneGroup)
	if err != nil {
		return topology.Spec{}, nil, err
	}
	pf, err := os.Open(filepath.Join(dir, OpenbPods))
	if err != nil {
		return topology.Spec{}, nil, err
	}
	defer pf.Close()
	pods, err := ReadOpenbPods(pf, oneGroup)
	return spec, pods, err
}

// ProtocolResult is one seed's run of the study's protocol.
type ProtocolResult struct {
	Seed uint64
	// Allocated is the share of GPU capacity allocated, in percent, at
	// each point of Levels, averaged over the arrivals whose requested
	// share, rounded to a percent, is that point.
	Allocated []float64
	// NoFits counts the pods refused; FalseNoFits those of them that a
	// scan of every node finds room for (by GPU form: share, whole,
	// none).
	NoFits                               int
	FalseShare, FalseWhole, FalseCPUOnly int
}

// RunProtocol replays the study's protocol for one seed: the pod list
// shuffled, then pods drawn from it with replacement until the requested
// GPUs pass 130% of capacity; each placed by policy on arrival or
// skipped. Every refusal is checked against a scan of every node.
func RunProtocol(spec topology.Spec, pods []gang.Workload, p Policy, seed uint64) (ProtocolResult, error) {
	f, err := topology.New(spec)
	if err != nil {
		return ProtocolResult{}, err
	}
	res := ProtocolResult{Seed: seed}
	capacity := float64(f.Stats(topology.Root, topology.AllGroups).GPUs) * gang.MilliGPU
	rng := rand.New(rand.NewPCG(seed, 0))
	list := slices.Clone(pods)
	rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	var total float64
	for i := range list {
		total += float64(list[i].MilliGPUs())
	}
	last := Levels()[len(Levels())-1]
	for total <= last*capacity && len(pods) > 0 {
		w := pods[rng.IntN(len(pods))]
		list = append(list, w)
		total += float64(w.MilliGPUs())
	}
	levels := Levels()
	sums, counts := make([]float64, len(levels)), make([]int, len(levels))
	var arrived float64
	for i := range list {
		w := &list[i]
		arrived += float64(w.MilliGPUs())
		if !p.Place(f, w) {
			res.NoFits++
			if anyNodeHolds(f, w) {
				switch ps := w.PodSets[0]; {
				case ps.GPUShare > 0:
					res.FalseShare++
				case ps.GPUsPerPod > 0:
					res.FalseWhole++
				default:
					res.FalseCPUOnly++
				}
			}
		}
		x := math.Round(100 * arrived / capacity)
		for j, l := range levels {
			if x == math.Round(100*l) {
				sums[j] += 100 * float64(f.MilliAllocated(topology.Root, topology.AllGroups)) / capacity
				counts[j]++
			}
		}
	}
	for j := range levels {
		if counts[j] == 0 {
			return res, fmt.Errorf("packing: no arrival at %.0f%% requested", 100*levels[j])
		}
		res.Allocated = append(res.Allocated, sums[j]/float64(counts[j]))
	}
	return res, nil
}

// anyNodeHolds reports whether some healthy node of a model w accepts
// has room for its one pod: the GPUs of its form and its resources.
func anyNodeHolds(f *topology.Fleet, w *gang.Workload) bool {
	ps := w.PodSets[0]
	for n := range topology.NodeID(f.NumNodes()) {
		if _, ok := w.Accepts(f.GroupFlavor(f.NodeGroup(n))); !ok || f.Health(n) != topology.Healthy {
			continue
		}
		fits := true
		for _, r := range ps.Resources {
			id, ok := f.Resource(r.Name)
			fits = fits && ok && f.ResourceFree(n, id) >= r.Amount
		}
		if !fits {
			continue
		}
		free, share := 0, false
		for i := range f.Capacity(n) {
			used, sl := f.GPUUsed(n, i)
			if f.GPUWhole(n, i) || sl != 0 {
				continue
			}
			if used == 0 {
				free++
			}
			share = share || topology.MilliGPU-used >= ps.GPUShare
		}
		switch {
		case ps.GPUShare > 0 && share && !f.MIG(n):
			return true
		case ps.GPUsPerPod > 0 && free >= ps.GPUsPerPod:
			return true
		case ps.NoGPU():
			return true
		}
	}
	return false
}

// NewFleetPolicyWith is the fleet's policy with the given placement
// options; a nil Ranker in opt gets the Fragmentation ranker unless
// plain is set.
func NewFleetPolicyWith(opt placement.Options, plain bool) Policy {
	fr := placement.NewFragmentation()
	if opt.Ranker == nil && !plain {
		opt.Ranker = fr
	}
	return &fleetPolicy{p: placement.NewPlacer(opt), frag: fr}
}

// OpenbVariants names the held-out variants of the pod list that
// OpenbVariant derives, beside "default" (the list as read).
func OpenbVariants() []string { return []string{"default", "gpuspec", "multigpu"} }

// OpenbVariant derives a variant of the pod list pods on the fleet of
// spec, from the list alone (the same every run):
//
//   - gpuspec: every third GPU pod accepts one GPU model only, drawn in
//     proportion to the GPUs of the models whose nodes have its GPUs,
//     cpu and memory (the study's gpuspec33);
//   - multigpu: the multi-GPU pods are repeated until they ask for 30%
//     of the list's GPUs (the study's multigpu30).
func OpenbVariant(spec topology.Spec, pods []gang.Workload, name string) ([]gang.Workload, error) {
	out := slices.Clone(pods)
	rng := rand.New(rand.NewPCG(2023, 7))
	switch name {
	case "default":
	case "gpuspec":
		gpu := 0
		for i := range out {
			w := &out[i]
			if w.PodSets[0].NoGPU() {
				continue
			}
			if gpu++; gpu%3 != 0 {
				continue
			}
			models, order := map[string]int{}, []string(nil)
			ps := w.PodSets[0]
			for _, n := range spec.Nodes {
				if n.Flavor == "" || n.GPUs < max(ps.GPUsPerPod, 1) || n.Resources["cpu"] < ps.Resource("cpu") || n.Resources["memory"] < ps.Resource("memory") {
					continue
				}
				if _, ok := models[n.Flavor]; !ok {
					order = append(order, n.Flavor)
				}
				models[n.Flavor] += n.GPUs
			}
			if len(order) == 0 {
				return nil, fmt.Errorf("packing: pod %s fits no GPU node", w.ID)
			}
			total := 0
			for _, m := range order {
				total += models[m]
			}
			x := rng.IntN(total)
			for _, m := range order {
				if x -= models[m]; x < 0 {
					w.Flavors = []string{m}
					break
				}
			}
		}
	case "multigpu":
		var all, multi int64
		var bigs []gang.Workload
		for i := range pods {
			all += pods[i].MilliGPUs()
			if pods[i].PodSets[0].GPUsPerPod > 1 {
				multi += pods[i].MilliGPUs()
				bigs = append(bigs, pods[i])
			}
		}
		if len(bigs) == 0 {
			return nil, fmt.Errorf("packing: the list has no multi-GPU pod")
		}
		for k := 0; multi < 3*all/10; k++ {
			w := bigs[k%len(bigs)]
			w.ID = fmt.Sprintf("%s-%d", w.ID, k/len(bigs)+1)
			out = append(out, w)
			all += w.MilliGPUs()
			multi += w.MilliGPUs()
		}
	default:
		return nil, fmt.Errorf("packing: no pod list variant %q (want one of %s)", name, strings.Join(OpenbVariants(), ", "))
	}
	return out, nil
}
