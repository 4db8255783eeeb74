package k8s

// Well-known label keys and resource names.
const (
	GPUResource   = "nvidia.com/gpu"         // the extended resource of NVIDIA's device plugin
	HostnameLabel = "kubernetes.io/hostname" // the node's name
	CliqueLabel   = "nvidia.com/gpu.clique"  // the NVLink domain (GPU feature discovery)
	ProductLabel  = "nvidia.com/gpu.product" // the GPU model (GPU feature discovery)
	CountLabel    = "nvidia.com/gpu.count"   // GPUs per node (GPU feature discovery)
	// GKEAcceleratorLabel is the GPU model GKE writes on every GPU node
	// ("nvidia-h100-80gb"); GKE nodes carry no nvidia.com/gpu.product
	// unless the NVIDIA GPU operator runs on them.
	GKEAcceleratorLabel = "cloud.google.com/gke-accelerator"
)

// Level is one level of the fleet: the node label whose value names the
// domain, and the level's name in the fleet.
type Level struct {
	Label string // the node label whose value names the domain
	Name  string // the level's name in the fleet
}

// Options says how node labels become a fleet.
type Options struct {
	// Levels lists the topology labels from the top down, as a Kueue
	// Topology's spec.levels. A last level kubernetes.io/hostname is the
	// node itself and is dropped. Domains are keyed by the path of values
	// ("blk-a/sb-3"), not by the value, so equal values under different
	// parents are different domains, as in Kueue.
	Levels []Level
	// NVLinkLabel, when set, names the label whose value is a node's
	// NVLink domain (nvidia.com/gpu.clique). If every domain lies within
	// one lowest-level domain it becomes the fleet's NVLink level (a new
	// level "nvlink" below the lowest, or that level itself when they
	// coincide); otherwise it stays a node label (WarnNotNested).
	NVLinkLabel string
	// FlavorLabel names the label giving the GPU model; "" means
	// nvidia.com/gpu.product. DefaultFlavor applies when it is absent; a
	// node with neither gets flavor "" and a WarnNoFlavor.
	FlavorLabel   string
	DefaultFlavor string
	// PoolLabel, when set, names the label giving the node's pool.
	PoolLabel string
	// Selector keeps only nodes carrying every one of these labels, as a
	// ResourceFlavor's nodeLabels select nodes.
	Selector map[string]string
	// PadBottom and PadTop accept nodes lacking the last (or first) level
	// labels, giving them synthetic domains (WarnPadded): AWS instance
	// types have 3 or 4 network layers, Topograph trees variable depth.
	PadBottom, PadTop bool
	// KeepLabels lists node labels copied into the fleet's node labels.
	KeepLabels []string
	// Resources lists the allocatable resources besides GPUs that become
	// the fleet nodes' resources (CPUAndMemory(), extended resources by
	// name): "cpu" in millicores, "memory" in bytes, others as counts.
	// nil reads none.
	Resources []string
	// CPUOnly keeps nodes without GPUs that have some of Resources, as
	// CPU-only nodes; without it they are left out (WarnNoGPUs).
	CPUOnly bool
	// Strict refuses what would otherwise be a warning: a node lacking a
	// level label (ErrMissingLabel) and unnested NVLink domains
	// (ErrNotNested).
	Strict bool
}

// GKE is the preset for Google Kubernetes Engine's TAS labels: block >
// subblock > host, NVLink domains from nvidia.com/gpu.clique, the GPU
// model (the flavor) from cloud.google.com/gke-accelerator.
func GKE() Options {
	return Options{
		Levels: []Level{
			{"cloud.google.com/gce-topology-block", "block"},
			{"cloud.google.com/gce-topology-subblock", "subblock"},
			{"cloud.google.com/gce-topology-host", "host"},
		},
		NVLinkLabel: CliqueLabel,
		FlavorLabel: GKEAcceleratorLabel,
	}
}

// AWS is the preset for EKS's network-node-layer labels, numbered from the
// top (layer-1 is the broadest). The depth is the deepest layer any node
// has (3 or 4); nodes of shallower instance types are padded at the
// bottom.
func AWS(nodes []Node) Options {
	depth := 3
	for _, n := range nodes {
		for k := 4; k > depth; k-- {
			if _, ok := n.Labels[awsLayer(k)]; ok {
				depth = k
			}
		}
	}
	o := Options{NVLinkLabel: CliqueLabel, PadBottom: true}
	for k := 1; k <= depth; k++ {
		o.Levels = append(o.Levels, Level{awsLayer(k), "layer-" + itoa(k)})
	}
	return o
}

func awsLayer(k int) string { return "topology.k8s.aws/network-node-layer-" + itoa(k) }

// Topograph is the preset for NVIDIA Topograph's labels in whichever
// generation the nodes carry (the newest one found wins):
//
//	fabric.topograph.run/tier-N + accelerator.topograph.run/domain (current)
//	network.topology.nvidia.com/tier-N + xclr.topology.nvidia.com/domain
//	network.topology.nvidia.com/{core,spine,leaf} + .../accelerator
//	network.topology.nvidia.com/{datacenter,spine,block} + .../accelerator
//
// Tiers are numbered from the node (tier-0 is the leaf), so the levels are
// tier-max ... tier-0 and trees of variable depth are padded at the top.
// The accelerator domain is the NVLink label; it becomes a level only if
// it nests (see Options.NVLinkLabel).
func Topograph(nodes []Node) Options {
	has := func(key string) bool {
		for _, n := range nodes {
			if _, ok := n.Labels[key]; ok {
				return true
			}
		}
		return false
	}
	tiers := func(prefix string) []Level {
		top := -1
		for _, n := range nodes {
			for k := 0; k < 16; k++ {
				if _, ok := n.Labels[prefix+itoa(k)]; ok && k > top {
					top = k
				}
			}
		}
		var ls []Level
		for k := top; k >= 0; k-- {
			ls = append(ls, Level{prefix + itoa(k), "tier-" + itoa(k)})
		}
		return ls
	}
	const old = "network.topology.nvidia.com/"
	o := Options{PadTop: true}
	switch {
	case len(tiers("fabric.topograph.run/tier-")) > 0 || has("accelerator.topograph.run/domain"):
		o.Levels, o.NVLinkLabel = tiers("fabric.topograph.run/tier-"), "accelerator.topograph.run/domain"
	case len(tiers(old+"tier-")) > 0 || has("xclr.topology.nvidia.com/domain"):
		o.Levels, o.NVLinkLabel = tiers(old+"tier-"), "xclr.topology.nvidia.com/domain"
	case has(old+"leaf") || has(old+"core"):
		o.Levels = []Level{{old + "core", "core"}, {old + "spine", "spine"}, {old + "leaf", "leaf"}}
		o.NVLinkLabel = old + "accelerator"
	default:
		o.Levels = []Level{{old + "datacenter", "datacenter"}, {old + "spine", "spine"}, {old + "block", "block"}}
		o.NVLinkLabel = old + "accelerator"
	}
	return o
}

// Preset returns the options of a named preset: "gke", "aws" or
// "topograph" (the last two look at the nodes to find the depth and the
// label generation).
func Preset(name string, nodes []Node) (Options, error) {
	switch name {
	case "gke":
		return GKE(), nil
	case "aws":
		return AWS(nodes), nil
	case "topograph":
		return Topograph(nodes), nil
	}
	return Options{}, &Error{Index: -1, Detail: name, Err: ErrUnknownPreset}
}

func itoa(k int) string {
	if k < 10 {
		return string(rune('0' + k))
	}
	return string(rune('0'+k/10)) + string(rune('0'+k%10))
}
