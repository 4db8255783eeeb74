package gang

// MilliGPU is one GPU in thousandths, the unit of GPU shares.
const MilliGPU = 1000

// PodSet is a group of identical pods of one workload: Count pods, each
// asking for GPUs in one of three forms (whole GPUs, a share of one GPU, or
// a MIG slice) or for none, plus any named resources. A pod never spans
// nodes, so GPUsPerPod is at most the GPUs of one node. A job may mix pod
// sets (a 1-GPU launcher beside 16 x 8-GPU workers); all pod sets of a
// workload are placed together.
type PodSet struct {
	// Name is unique within the workload and non-empty ("workers").
	Name string `json:"name"`
	// Count is the number of pods, at least 1.
	Count int `json:"count"`
	// MinCount is the fewest pods an elastic pod set can run with:
	// 1 <= MinCount <= Count, and 0 means Count (not elastic). A
	// scheduler admits an elastic pod set of whole-GPU pods at any size
	// from MinCount to Count, takes pods from it one by one (each drained)
	// before evicting it whole, and grows it back toward Count.
	MinCount int `json:"minCount,omitempty"`
	// GPUsPerPod is the whole GPUs of each pod: at most one node's GPUs.
	// It is 0 when the pod asks for a share, a MIG slice or no GPU.
	GPUsPerPod int `json:"gpusPerPod"`
	// GPUShare is a share of one GPU in thousandths, (0, 1000], for pods
	// that share a GPU with others (time-slicing). 0: no share.
	GPUShare int `json:"gpuShare,omitempty"`
	// MIG names the MIG profile of each pod's slice ("1g.10gb"); it runs
	// only on nodes whose GPU model has that profile. "": no slice.
	MIG string `json:"mig,omitempty"`
	// Resources lists what each pod needs besides GPUs ("cpu" in
	// millicores, "memory" in bytes, any extended resource), each name
	// once. A pod set with no GPU form and some resources is CPU-only.
	Resources []Resource `json:"resources,omitempty"`
	// RankGroups lists groups of consecutive ranks (pod indices) that
	// should share one domain of a level, smallest first (see RankGroup).
	// Placement numbers pods in rank order either way; groups say which
	// neighbours must, or should, sit close together.
	RankGroups []RankGroup `json:"rankGroups,omitempty"`
}

// Resource is an amount of one named resource, in the unit the fleet
// uses for it (millicores for cpu, bytes for memory by convention).
type Resource struct {
	Name   string `json:"name"`   // the resource's name, as the nodes' Resources name it
	Amount int64  `json:"amount"` // how much, in its unit
}

// GPUs returns the whole GPUs of the whole pod set; shares and MIG slices
// count 0 here (see MilliGPUs). It does not allocate.
func (p PodSet) GPUs() int { return p.Count * p.GPUsPerPod }

// Shared reports whether each pod takes part of one GPU: a share or a
// MIG slice.
func (p PodSet) Shared() bool { return p.GPUShare > 0 || p.MIG != "" }

// NoGPU reports whether the pods ask for no GPU at all.
func (p PodSet) NoGPU() bool { return p.GPUsPerPod == 0 && !p.Shared() }

// MilliGPUsPerPod is what one pod takes of GPUs, in thousandths: whole
// GPUs times 1000, or its share. A MIG slice's share depends on the GPU
// model and on the compute slices it lands on, and is known once placed
// (placement reports it per pod); here it counts 0.
func (p PodSet) MilliGPUsPerPod() int64 {
	return int64(p.GPUsPerPod)*MilliGPU + int64(p.GPUShare)
}

// Min returns the elastic minimum: MinCount, or Count when it is 0.
func (p PodSet) Min() int {
	if p.MinCount == 0 {
		return p.Count
	}
	return p.MinCount
}

// Resource returns the amount of the named resource each pod needs, 0 when
// it lists none. It does not allocate.
func (p PodSet) Resource(name string) int64 {
	for _, r := range p.Resources {
		if r.Name == name {
			return r.Amount
		}
	}
	return 0
}
