// Package k8s imports a fleet (topology.Spec) from Kubernetes nodes and
// their topology labels, the way Kueue's Topology object reads them.
//
// An ordered list of label keys is the level list, top first; a node's
// domain at each level is identified by the path of values from the top
// ("blk-a/sb-3"), never by the raw value, so the same rack value under two
// blocks is two domains, as in Kueue. Presets cover the providers:
//
//   - GKE: cloud.google.com/gce-topology-{block,subblock,host};
//   - AWS: topology.k8s.aws/network-node-layer-1..3 or ..4, numbered from
//     the top; 3-layer nodes in a 4-layer fleet are padded at the bottom;
//   - Topograph: tiers numbered from the node (tier-0 is the leaf) in all
//     four label generations, padded at the top for shallower trees.
//
// nvidia.com/gpu.clique (or Topograph's accelerator domain) gives NVLink
// domains: a level when they nest inside the lowest level, a node label
// with a warning when they do not. nvidia.com/gpu.product is the flavor
// (cloud.google.com/gke-accelerator in the GKE preset, as GKE labels its
// GPU nodes), and allocatable nvidia.com/gpu (or nvidia.com/gpu.count) the
// GPU count; nodes left without a flavor are named in a warning. The
// allocatable resources Options.Resources names (CPUAndMemory(), extended
// resources) become the nodes' resources: cpu in millicores, memory in
// bytes, others as counts, rounded up; Options.CPUOnly keeps nodes without
// GPUs that have them.
//
// What it is not: it talks to no API server. The host lists the nodes
// (ParseNodes reads `kubectl get nodes -o yaml`, `kubectl get node X -o
// yaml`, a "---" stream of Nodes, or a plain list) and decides which are
// schedulable. The package keeps Kubernetes types out of
// the core packages.
//
//	nodes, err := k8s.ParseNodes(data, "")        // nvidia.com/gpu
//	opts, err := k8s.Preset("gke", nodes)
//	res, err := k8s.Import(nodes, opts)           // *k8s.Error names the node
//	for _, w := range res.Warnings { log.Print(w) } // nodes left out, padding
//	fleet, err := topology.New(res.Spec)
package k8s
