package placement

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetsched/fleet/topology"
)

// Pod is where one pod of a workload runs.
type Pod struct {
	PodSet int             // index into the workload's PodSets
	Index  int             // pod index within its pod set
	Node   topology.NodeID // the node it runs on
	GPUs   int             // GPUs it takes there
}

// Assignment places every pod of one workload. It is a value: applying it
// to a fleet is a separate, all-or-nothing step (Apply).
type Assignment struct {
	Workload string
	Group    topology.GroupID // the (flavor, pool) partition it runs in
	// Domain is the domain that holds every pod, at Level: the level at
	// which placement found room. Span may be lower when the pods happen
	// to share a smaller domain.
	Domain topology.DomainID
	Level  topology.Level
	Span   topology.Level
	Pods   []Pod
}

// GPUs is the total GPUs of the assignment.
func (a Assignment) GPUs() int {
	n := 0
	for _, p := range a.Pods {
		n += p.GPUs
	}
	return n
}

// Clone returns a copy that does not share the Pods slice.
func (a Assignment) Clone() Assignment {
	a.Pods = slices.Clone(a.Pods)
	return a
}

// NodeGPUs returns the GPUs taken per node, one entry per node in order of
// node ID: the unit Apply and Unapply work in.
func (a Assignment) NodeGPUs() []NodeGPUs {
	out := make([]NodeGPUs, 0, len(a.Pods))
	for _, p := range a.Pods {
		out = append(out, NodeGPUs{p.Node, p.GPUs})
	}
	return mergeNodes(out)
}

// NodeGPUs is a number of GPUs on one node.
type NodeGPUs struct {
	Node topology.NodeID
	GPUs int
}

func mergeNodes(v []NodeGPUs) []NodeGPUs {
	slices.SortFunc(v, func(a, b NodeGPUs) int { return int(a.Node) - int(b.Node) })
	out := v[:0]
	for _, x := range v {
		if len(out) > 0 && out[len(out)-1].Node == x.Node {
			out[len(out)-1].GPUs += x.GPUs
			continue
		}
		out = append(out, x)
	}
	return out
}

// Format renders the assignment for people: the domain, the span and the
// pods per node, e.g. "spine-3 (span leaf): node-3-0-0=8 node-3-0-1=8".
func (a Assignment) Format(f *topology.Fleet) string {
	var b strings.Builder
	name := f.DomainName(a.Domain)
	if name == "" {
		name = "fleet"
	}
	fmt.Fprintf(&b, "%s (span %s):", name, f.LevelName(a.Span))
	for _, ng := range a.NodeGPUs() {
		fmt.Fprintf(&b, " %s=%d", f.NodeName(ng.Node), ng.GPUs)
	}
	return b.String()
}

// Apply allocates the assignment's GPUs on f, all or nothing: it checks
// every node first (known, not down, enough free GPUs for all its pods
// together) and changes nothing on error.
func Apply(f *topology.Fleet, a Assignment) error {
	nodes := a.NodeGPUs()
	for _, ng := range nodes {
		if ng.Node < 0 || int(ng.Node) >= f.NumNodes() {
			return &topology.NodeError{Node: fmt.Sprintf("#%d", ng.Node), Err: topology.ErrUnknownNode}
		}
		if ng.GPUs <= 0 {
			return &topology.NodeError{Node: f.NodeName(ng.Node), Requested: ng.GPUs, Err: topology.ErrBadAmount}
		}
		if f.Health(ng.Node) == topology.Down {
			return &topology.NodeError{Node: f.NodeName(ng.Node), Err: topology.ErrNodeDown}
		}
		if free := f.Free(ng.Node); ng.GPUs > free {
			return &topology.NodeError{Node: f.NodeName(ng.Node), Requested: ng.GPUs, Available: free, Err: topology.ErrOverAlloc}
		}
	}
	for _, ng := range nodes {
		if err := f.Allocate(ng.Node, ng.GPUs); err != nil {
			panic(fmt.Sprintf("placement: allocate after validation: %v", err))
		}
	}
	return nil
}

// Unapply releases the assignment's GPUs on f, all or nothing.
func Unapply(f *topology.Fleet, a Assignment) error {
	nodes := a.NodeGPUs()
	for _, ng := range nodes {
		if ng.Node < 0 || int(ng.Node) >= f.NumNodes() {
			return &topology.NodeError{Node: fmt.Sprintf("#%d", ng.Node), Err: topology.ErrUnknownNode}
		}
		if ng.GPUs <= 0 {
			return &topology.NodeError{Node: f.NodeName(ng.Node), Requested: ng.GPUs, Err: topology.ErrBadAmount}
		}
		if held := f.Allocated(ng.Node); ng.GPUs > held {
			return &topology.NodeError{Node: f.NodeName(ng.Node), Requested: ng.GPUs, Available: held, Err: topology.ErrOverRelease}
		}
	}
	for _, ng := range nodes {
		if err := f.Release(ng.Node, ng.GPUs); err != nil {
			panic(fmt.Sprintf("placement: release after validation: %v", err))
		}
	}
	return nil
}
