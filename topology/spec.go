package topology

import (
	"fmt"
	"strconv"
)

// Spec describes a fleet as plain data: the ordered levels of its tree and
// its nodes. It is what importers produce and what [New] validates.
//
// Levels are listed from the top of the tree down and end with the node
// level, for example ["spine", "leaf", "node"] or ["rack", "node"]. The
// whole fleet is the implicit root above the first level.
type Spec struct {
	// Levels names the levels from the top down; the last one is the node.
	Levels []string `json:"levels"`
	// NVLink names the level that forms one NVLink domain. Empty means the
	// node level (an 8-GPU HGX board); a GB200 NVL72 fleet names its rack.
	NVLink string `json:"nvlink,omitempty"`
	// Nodes lists every node. Their order fixes the order of domains and
	// nodes inside the fleet (first appearance wins), so it is part of
	// what makes decisions deterministic.
	Nodes []NodeSpec `json:"nodes"`
}

// NodeSpec is one node: a machine whose GPUs share its NVLink fabric.
type NodeSpec struct {
	Name string `json:"name"` // unique across the fleet
	// Path holds the node's domain name at every level above the node,
	// top first: len(Path) == len(Spec.Levels)-1. A domain name is unique
	// within its level, so "leaf-3" is one switch wherever it appears.
	Path   []string          `json:"path"`
	GPUs   int               `json:"gpus"`
	Flavor string            `json:"flavor,omitempty"`
	Pool   string            `json:"pool,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Resources holds the node's capacity of named resources besides GPUs
	// ("cpu" in millicores, "memory" in bytes, any extended resource). A
	// node with resources may have no GPU (a CPU-only node).
	Resources map[string]int64 `json:"resources,omitempty"`
	// MIG says the node's GPUs are partitioned with MIG: they take MIG
	// slices of the profiles of the flavor's model (see MIGProfiles), or
	// whole-GPU pods, but no time-sliced shares.
	MIG bool `json:"mig,omitempty"`
	// Absent declares a node that is not in service yet (or any more): it
	// has its place in the tree, but starts with health Absent, takes no
	// work and counts in no capacity until it is brought in.
	Absent bool `json:"absent,omitempty"`
}

// UniformSpec describes a regular fleet: every domain of a level has the
// same number of children and every node the same number of GPUs.
type UniformSpec struct {
	// Levels as in Spec, ending with the node level.
	Levels []string
	// Fanout[i] is the number of domains of Levels[i] under each domain of
	// the level above (under the fleet for i == 0); one entry per level.
	Fanout      []int
	GPUsPerNode int
	Flavor      string
	Pool        string
}

// Uniform builds the Spec of a regular fleet. Domain names carry the level
// name and the indexes of the path, e.g. "leaf-1-3" is leaf 3 of spine 1,
// so every name is unique within its level. It does not validate: New does.
func Uniform(u UniformSpec) Spec {
	s := Spec{Levels: append([]string(nil), u.Levels...)}
	if len(u.Levels) == 0 || len(u.Fanout) != len(u.Levels) {
		return s
	}
	total := 1
	for _, f := range u.Fanout {
		if f <= 0 {
			return s
		}
		total *= f
	}
	s.Nodes = make([]NodeSpec, 0, total)
	idx := make([]int, len(u.Fanout))
	for range total {
		path := make([]string, len(u.Levels)-1)
		name := ""
		for l := range u.Levels {
			name += "-" + strconv.Itoa(idx[l])
			if l < len(path) {
				path[l] = u.Levels[l] + name
			}
		}
		s.Nodes = append(s.Nodes, NodeSpec{
			Name:   u.Levels[len(u.Levels)-1] + name,
			Path:   path,
			GPUs:   u.GPUsPerNode,
			Flavor: u.Flavor,
			Pool:   u.Pool,
		})
		for l := len(idx) - 1; l >= 0; l-- {
			idx[l]++
			if idx[l] < u.Fanout[l] {
				break
			}
			idx[l] = 0
		}
	}
	return s
}

// Reference is the reference fleet of the design: 2,048 H100 GPUs as
// 4 spines x 8 leaf switches x 8 nodes x 8 GPUs.
func Reference() Spec {
	return Uniform(UniformSpec{
		Levels:      []string{"spine", "leaf", "node"},
		Fanout:      []int{4, 8, 8},
		GPUsPerNode: 8,
		Flavor:      "H100",
	})
}

// Scaled is the reference fleet's shape grown to about gpus GPUs: 8-GPU
// nodes, 8 nodes per leaf, and spines of 8 to 64 leaves. It serves the
// scale ladders of benchmarks: 2,048 GPUs is 4x8x8, 16,384 is 8x32x8 and
// 131,072 is 32x64x8 (spines x leaves x nodes).
func Scaled(gpus int) Spec {
	nodes := max(gpus/8, 1)
	leaves := max(nodes/8, 1)
	perSpine := 8
	for perSpine < 64 && leaves > perSpine*perSpine/2 {
		perSpine *= 2 // keep spines few and wide, as real fabrics are
	}
	spines := max(leaves/perSpine, 1)
	return Uniform(UniformSpec{
		Levels:      []string{"spine", "leaf", "node"},
		Fanout:      []int{spines, perSpine, 8},
		GPUsPerNode: 8,
		Flavor:      "H100",
	})
}

// String sums the spec up: its levels and its node count.
func (s Spec) String() string {
	return fmt.Sprintf("topology.Spec{levels=%v nodes=%d}", s.Levels, len(s.Nodes))
}
