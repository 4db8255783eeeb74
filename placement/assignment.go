package placement

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// Pod is where one pod of a workload runs, and on which GPUs.
type Pod struct {
	PodSet int             // index into the workload's PodSets
	Index  int             // pod index within its pod set
	Node   topology.NodeID // the node it runs on
	GPUs   int             // whole GPUs it takes there
	// GPUMask names the whole GPUs, bit i for GPU i of the node (0 on
	// nodes of more than 64 GPUs, where whole GPUs are counted only).
	GPUMask uint64
	// GPU is the GPU holding the pod's share or MIG slice.
	GPU int
	// Share is the thousandths of GPU the pod takes on GPU: its share, or
	// its MIG slice's charge there (MIGProfile.ShareAt of its Slice); 0
	// for whole-GPU and CPU-only pods.
	Share int
	// MIG is the pod's MIG profile and Slice the memory slice it starts at.
	MIG   string
	Slice int
	// Resources are the pod's named resources, shared with its pod set:
	// read them, never modify them.
	Resources []gang.Resource
}

// MilliGPUs is what the pod takes of GPUs, in thousandths.
func (p Pod) MilliGPUs() int64 { return int64(p.GPUs)*gang.MilliGPU + int64(p.Share) }

// claim is the topology claim of pod p on f, and false when its
// resources name one the fleet lacks. buf is reused for the resources.
func (p Pod) claim(f *topology.Fleet, buf []topology.ResourceAmount) (topology.Claim, []topology.ResourceAmount, error) {
	c := topology.Claim{Node: p.Node, Whole: p.GPUMask, GPU: p.GPU, MIG: p.MIG, Slice: p.Slice}
	if p.MIG == "" {
		c.Share = p.Share
	}
	buf = buf[:0]
	for _, r := range p.Resources {
		id, ok := f.Resource(r.Name)
		if !ok {
			return c, buf, &topology.NodeError{Node: f.NodeName(p.Node), Detail: "resource " + r.Name, Err: topology.ErrUnknownResource}
		}
		buf = append(buf, topology.ResourceAmount{Resource: id, Amount: r.Amount})
	}
	c.Resources = buf
	return c, buf, nil
}

// counted reports whether the pod holds only whole GPUs without naming
// them, so that it is applied by count.
func (p Pod) counted() bool {
	return p.GPUMask == 0 && p.Share == 0 && p.MIG == "" && len(p.Resources) == 0
}

// Assignment places every pod of one workload. It is a value: applying it
// to a fleet is a separate, all-or-nothing step (Apply).
type Assignment struct {
	Workload string           // the workload's ID
	Group    topology.GroupID // the (flavor, pool) partition it runs in
	// Domain is the domain that holds every pod, at Level: the level at
	// which placement found room. Span may be lower when the pods happen
	// to share a smaller domain.
	Domain topology.DomainID
	Level  topology.Level
	Span   topology.Level
	Pods   []Pod
}

// MilliGPUs is the assignment's GPUs in thousandths, shares and MIG slices
// included: what quota is charged.
func (a Assignment) MilliGPUs() int64 {
	var n int64
	for _, p := range a.Pods {
		n += p.MilliGPUs()
	}
	return n
}

// GPUs is the total whole GPUs of the assignment.
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

// NodeGPUs returns the whole GPUs taken per node, one entry per node in
// order of node ID (nodes where the workload holds only shares, slices or
// resources are left out).
func (a Assignment) NodeGPUs() []NodeGPUs {
	out := make([]NodeGPUs, 0, len(a.Pods))
	for _, p := range a.Pods {
		if p.GPUs > 0 {
			out = append(out, NodeGPUs{p.Node, p.GPUs})
		}
	}
	return mergeNodes(out)
}

// NodeGPUs is a number of GPUs on one node.
type NodeGPUs struct {
	Node topology.NodeID // the node
	GPUs int             // the GPUs taken on it
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

// Apply allocates the assignment's GPUs, shares, slices and resources on
// f, all or nothing: pods that name their GPUs are claimed one by one and
// rolled back on the first refusal; pods that only count whole GPUs are
// checked together per node first. It changes nothing on error.
func Apply(f *topology.Fleet, a Assignment) error {
	return apply(f, a, true)
}

// Unapply releases the assignment on f, all or nothing.
func Unapply(f *topology.Fleet, a Assignment) error {
	return apply(f, a, false)
}

func apply(f *topology.Fleet, a Assignment, take bool) error {
	var counted []NodeGPUs
	for _, p := range a.Pods {
		if p.counted() {
			counted = append(counted, NodeGPUs{p.Node, p.GPUs})
		}
	}
	counted = mergeNodes(counted)
	for _, ng := range counted {
		if err := checkCounted(f, ng, take); err != nil {
			return err
		}
	}
	var buf []topology.ResourceAmount
	for i, p := range a.Pods {
		if p.counted() {
			continue
		}
		c, b, err := p.claim(f, buf)
		buf = b
		if err == nil {
			if take {
				err = f.AllocateClaim(c)
			} else {
				err = f.ReleaseClaim(c)
			}
		}
		if err != nil {
			for _, q := range a.Pods[:i] {
				if q.counted() {
					continue
				}
				c, b, _ := q.claim(f, buf)
				buf = b
				var undo error
				if take {
					undo = f.ReleaseClaim(c)
				} else {
					undo = f.AllocateClaim(c)
				}
				if undo != nil {
					panic(fmt.Sprintf("placement: undo of a claim refused: %v", undo))
				}
			}
			return err
		}
	}
	for _, ng := range counted {
		var err error
		if take {
			err = f.Allocate(ng.Node, ng.GPUs)
		} else {
			err = f.Release(ng.Node, ng.GPUs)
		}
		if err != nil {
			panic(fmt.Sprintf("placement: counted GPUs after validation: %v", err))
		}
	}
	return nil
}

func checkCounted(f *topology.Fleet, ng NodeGPUs, take bool) error {
	if ng.Node < 0 || int(ng.Node) >= f.NumNodes() {
		return &topology.NodeError{Node: fmt.Sprintf("#%d", ng.Node), Err: topology.ErrUnknownNode}
	}
	if ng.GPUs <= 0 {
		return &topology.NodeError{Node: f.NodeName(ng.Node), Requested: ng.GPUs, Err: topology.ErrBadAmount}
	}
	if take {
		if f.Health(ng.Node).Gone() {
			return &topology.NodeError{Node: f.NodeName(ng.Node), Err: topology.ErrNodeDown}
		}
		if free := f.Free(ng.Node); ng.GPUs > free {
			return &topology.NodeError{Node: f.NodeName(ng.Node), Requested: ng.GPUs, Available: free, Err: topology.ErrOverAlloc}
		}
		return nil
	}
	if held := f.WholeHeld(ng.Node); ng.GPUs > held {
		return &topology.NodeError{Node: f.NodeName(ng.Node), Requested: ng.GPUs, Available: held, Err: topology.ErrOverRelease}
	}
	return nil
}
