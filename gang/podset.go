package gang

// PodSet is a group of identical pods of one workload: Count pods of
// GPUsPerPod GPUs each. A pod never spans nodes, so GPUsPerPod is at most
// the GPUs of one node. A job may mix pod sets (a 1-GPU launcher beside
// 16 x 8-GPU workers); all pod sets of a workload are placed together.
type PodSet struct {
	// Name is unique within the workload and non-empty ("workers").
	Name string `json:"name"`
	// Count is the number of pods, at least 1.
	Count int `json:"count"`
	// GPUsPerPod is at least 1 and at most one node's GPUs.
	GPUsPerPod int `json:"gpusPerPod"`
}

// GPUs returns the GPUs of the whole pod set. It does not allocate.
func (p PodSet) GPUs() int { return p.Count * p.GPUsPerPod }
