package quota

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Spec is the whole quota configuration: the GPU flavors and the nodes of
// the tree. It is plain data with JSON tags, so it can be stored, diffed and
// published; New checks it and builds a Tree.
//
// Every node whose Parent is empty is a root. A Spec may hold several roots:
// each is an independent tree that lends nothing to the others, exactly like
// separate Kueue cohort trees and ClusterQueues without a cohort.
type Spec struct {
	Flavors []string `json:"flavors,omitempty"` // the GPU models, in order; every quota names one
	// Resources names the resources besides GPUs that quotas cover ("cpu",
	// "memory", any extended resource), as a Kueue resource group's
	// coveredResources: each flavor entry may give them a quota.
	Resources []string   `json:"resources,omitempty"`
	Nodes     []NodeSpec `json:"nodes,omitempty"`
}

// NodeSpec is one cohort or queue. It corresponds to a Kueue Cohort (Kind
// Cohort) or ClusterQueue (Kind Queue) with a single resource, GPUs, whose
// flavors are GPU models.
type NodeSpec struct {
	Name   string `json:"name"`             // unique in the tree
	Parent string `json:"parent,omitempty"` // "" for a root
	Kind   Kind   `json:"kind"`             // Cohort or Queue
	// Quotas lists, per flavor, the node's own quota. A queue can use only
	// the flavors listed here (as a ClusterQueue can use only the flavors of
	// its resource groups), even when the nominal quota is 0.
	Quotas []FlavorQuota `json:"quotas,omitempty"`
	// Weight is the fair-sharing weight; nil means 1. A weight of 0 makes the
	// node's share infinite as soon as it borrows: it gets only what nobody
	// else wants.
	Weight *float64 `json:"weight,omitempty"`
	// Preemption and QueueingStrategy apply to queues only; a cohort must
	// leave them zero.
	Preemption       Rules    `json:"preemption,omitzero"`
	QueueingStrategy Strategy `json:"queueingStrategy,omitzero"`
	// FlavorFungibility applies to queues only, as Preemption does.
	FlavorFungibility Fungibility `json:"flavorFungibility,omitzero"`
	// ResourceGroups, when set, splits the resources into groups as a
	// Kueue ClusterQueue's resourceGroups do: each group covers some
	// resources and lists its flavors in order, and every flavor of
	// Quotas is in exactly one group. A workload's pod set gets one
	// flavor per group (see Tree.Assign). Unset: one group covers GPUs
	// and every resource, with the flavors of Quotas in order, and a
	// workload is charged everything in the flavor of its GPU model.
	ResourceGroups []ResourceGroup `json:"resourceGroups,omitempty"`
}

// FlavorQuota is a node's quota for one flavor, as in a Kueue resource
// group's flavor entry.
type FlavorQuota struct {
	Flavor  string `json:"flavor"`  // the GPU model
	Nominal int64  `json:"nominal"` // the guarantee, in GPUs
	// BorrowingLimit caps how far above its subtree quota the node may go
	// with capacity lent by the rest of the tree. Unset: no cap.
	BorrowingLimit Limit `json:"borrowingLimit,omitzero"`
	// LendingLimit caps how much of the node's subtree quota is visible to
	// its parent; the rest stays private to the subtree. Unset: all of it is
	// lent when unused.
	LendingLimit Limit `json:"lendingLimit,omitzero"`
	// Resources gives the flavor's quota of named resources (each listed
	// in Spec.Resources, each once). A queue uses a resource of a flavor
	// only if it lists it here, as in a Kueue resource group.
	Resources []ResourceQuota `json:"resources,omitempty"`
}

// ResourceQuota is a quota of one named resource within a flavor entry,
// in the resource's own unit (millicores, bytes...).
type ResourceQuota struct {
	Name           string `json:"name"`                    // the resource, as the nodes' Resources name it
	Nominal        int64  `json:"nominal"`                 // the guarantee, in its unit
	BorrowingLimit Limit  `json:"borrowingLimit,omitzero"` // at most this much above Nominal (unlimited when unset)
	LendingLimit   Limit  `json:"lendingLimit,omitzero"`   // at most this much of Nominal lent (unlimited when unset)
}

// Kind says whether a node is a cohort (inner node) or a queue (leaf).
type Kind uint8

const (
	// Cohort is an inner node: it may hold a shared pool of quota and
	// children, never workloads.
	Cohort Kind = iota + 1
	// Queue is a leaf: only queues hold workloads.
	Queue
)

// Rules are a queue's preemption rules, Kueue's ClusterQueue
// spec.preemption. quota stores them; preempt interprets them.
type Rules struct {
	WithinQueue         WithinQueue         `json:"withinQueue,omitzero"`         // preemption inside the queue (Kueue's withinClusterQueue)
	ReclaimWithinCohort ReclaimWithinCohort `json:"reclaimWithinCohort,omitzero"` // reclaiming lent quota from the cohort (Kueue's reclaimWithinCohort)
	BorrowWithinCohort  BorrowWithinCohort  `json:"borrowWithinCohort,omitzero"`  // preempting while borrowing (Kueue's borrowWithinCohort)
}

// WithinQueue says which workloads of the preemptor's own queue may be
// preempted (Kueue's withinClusterQueue).
type WithinQueue uint8

const (
	WithinQueueNever                     WithinQueue = iota // default
	WithinQueueLowerPriority                                // strictly lower priority
	WithinQueueLowerOrNewerEqualPriority                    // lower, or equal and newer
)

// ReclaimWithinCohort says which workloads of other queues, borrowing in the
// tree, may be preempted to take back lent quota.
type ReclaimWithinCohort uint8

const (
	ReclaimNever         ReclaimWithinCohort = iota // default
	ReclaimLowerPriority                            // strictly lower priority
	ReclaimAny                                      // any priority
)

// BorrowPolicy says whether a queue may preempt in other queues while it
// will itself still be borrowing.
type BorrowPolicy uint8

const (
	BorrowNever         BorrowPolicy = iota // default
	BorrowLowerPriority                     // victims of lower priority, at most MaxPriorityThreshold
)

// BorrowWithinCohort is Kueue's borrowWithinCohort.
type BorrowWithinCohort struct {
	Policy BorrowPolicy `json:"policy,omitzero"` // whom a borrowing workload may preempt
	// MaxPriorityThreshold, when set, admits as victims only workloads whose
	// priority is at most this value. The Tree shares the pointed-to value
	// between calls and clones: read it, never write through it.
	MaxPriorityThreshold *int32 `json:"maxPriorityThreshold,omitempty"`
}

// Threshold returns the maximum victim priority and whether one is set.
func (b BorrowWithinCohort) Threshold() (int32, bool) {
	if b.MaxPriorityThreshold == nil {
		return 0, false
	}
	return *b.MaxPriorityThreshold, true
}

// Strategy is a queue's queueing strategy.
type Strategy uint8

const (
	// BestEffortFIFO (the default, as in Kueue) sets an inadmissible head
	// aside and tries the next workload.
	BestEffortFIFO Strategy = iota
	// StrictFIFO makes the head block the queue until it is admitted.
	StrictFIFO
)

// Text forms, shared by String, MarshalText and UnmarshalText. The empty
// string decodes as the zero value, the Kueue default. They are functions
// returning fresh slices so that no package-level variable can be modified.
func kindNames() []string { return []string{"", "cohort", "queue"} }
func withinQueueNames() []string {
	return []string{"Never", "LowerPriority", "LowerOrNewerEqualPriority"}
}
func reclaimNames() []string  { return []string{"Never", "LowerPriority", "Any"} }
func borrowNames() []string   { return []string{"Never", "LowerPriority"} }
func strategyNames() []string { return []string{"BestEffortFIFO", "StrictFIFO"} }

func enumString(names []string, v uint8, typ string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}

func enumMarshal(names []string, v uint8, typ string) ([]byte, error) {
	if int(v) < len(names) {
		return []byte(names[v]), nil
	}
	return nil, fmt.Errorf("%w: %s(%d)", ErrInvalidSpec, typ, v)
}

func enumUnmarshal(names []string, b []byte, typ string) (uint8, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for i, n := range names {
		if n != "" && n == string(b) {
			return uint8(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown %s %q", ErrInvalidSpec, typ, b)
}

// String returns the kind's name, as specs and messages spell it.
func (k Kind) String() string { return enumString(kindNames(), uint8(k), "Kind") }

// MarshalText encodes the kind as its name, for JSON and YAML.
func (k Kind) MarshalText() ([]byte, error) { return enumMarshal(kindNames(), uint8(k), "Kind") }

// UnmarshalText decodes a name as MarshalText writes it.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := enumUnmarshal(kindNames(), b, "kind")
	*k = Kind(v)
	return err
}

// String returns the within queue's name, as specs and messages spell it.
func (w WithinQueue) String() string { return enumString(withinQueueNames(), uint8(w), "WithinQueue") }

// MarshalText encodes the within queue as its name, for JSON and YAML.
func (w WithinQueue) MarshalText() ([]byte, error) {
	return enumMarshal(withinQueueNames(), uint8(w), "WithinQueue")
}

// UnmarshalText decodes a name as MarshalText writes it.
func (w *WithinQueue) UnmarshalText(b []byte) error {
	v, err := enumUnmarshal(withinQueueNames(), b, "withinQueue")
	*w = WithinQueue(v)
	return err
}

// String returns the reclaim within cohort's name, as specs and messages spell it.
func (r ReclaimWithinCohort) String() string {
	return enumString(reclaimNames(), uint8(r), "ReclaimWithinCohort")
}

// MarshalText encodes the reclaim within cohort as its name, for JSON and YAML.
func (r ReclaimWithinCohort) MarshalText() ([]byte, error) {
	return enumMarshal(reclaimNames(), uint8(r), "ReclaimWithinCohort")
}

// UnmarshalText decodes a name as MarshalText writes it.
func (r *ReclaimWithinCohort) UnmarshalText(b []byte) error {
	v, err := enumUnmarshal(reclaimNames(), b, "reclaimWithinCohort")
	*r = ReclaimWithinCohort(v)
	return err
}

// String returns the borrow policy's name, as specs and messages spell it.
func (p BorrowPolicy) String() string { return enumString(borrowNames(), uint8(p), "BorrowPolicy") }

// MarshalText encodes the borrow policy as its name, for JSON and YAML.
func (p BorrowPolicy) MarshalText() ([]byte, error) {
	return enumMarshal(borrowNames(), uint8(p), "BorrowPolicy")
}

// UnmarshalText decodes a name as MarshalText writes it.
func (p *BorrowPolicy) UnmarshalText(b []byte) error {
	v, err := enumUnmarshal(borrowNames(), b, "borrowWithinCohort.policy")
	*p = BorrowPolicy(v)
	return err
}

// String returns the strategy's name, as specs and messages spell it.
func (s Strategy) String() string { return enumString(strategyNames(), uint8(s), "Strategy") }

// MarshalText encodes the strategy as its name, for JSON and YAML.
func (s Strategy) MarshalText() ([]byte, error) {
	return enumMarshal(strategyNames(), uint8(s), "Strategy")
}

// UnmarshalText decodes a name as MarshalText writes it.
func (s *Strategy) UnmarshalText(b []byte) error {
	v, err := enumUnmarshal(strategyNames(), b, "queueingStrategy")
	*s = Strategy(v)
	return err
}

// ParseSpec decodes a JSON Spec strictly: unknown fields, trailing data and
// malformed values are refused. Every error is a *SpecError wrapping
// ErrInvalidSpec. ParseSpec does not check the tree's rules; New does.
func ParseSpec(data []byte) (Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return Spec{}, &SpecError{Detail: err.Error(), Err: ErrInvalidSpec}
	}
	if _, err := dec.Token(); err != io.EOF {
		return Spec{}, &SpecError{Detail: "trailing data after the spec", Err: ErrInvalidSpec}
	}
	return s, nil
}

// clone returns a deep copy, so a Tree never shares memory with its caller.
func (s Spec) clone() Spec {
	out := Spec{Flavors: append([]string(nil), s.Flavors...), Resources: append([]string(nil), s.Resources...)}
	if s.Nodes != nil {
		out.Nodes = make([]NodeSpec, len(s.Nodes))
	}
	for i, n := range s.Nodes {
		n.ResourceGroups = append([]ResourceGroup(nil), n.ResourceGroups...)
		for j := range n.ResourceGroups {
			g := &n.ResourceGroups[j]
			g.Resources = append([]string(nil), g.Resources...)
			g.Flavors = append([]string(nil), g.Flavors...)
		}
		n.Quotas = append([]FlavorQuota(nil), n.Quotas...)
		for j := range n.Quotas {
			n.Quotas[j].Resources = append([]ResourceQuota(nil), n.Quotas[j].Resources...)
		}
		if n.Weight != nil {
			w := *n.Weight
			n.Weight = &w
		}
		if p := n.Preemption.BorrowWithinCohort.MaxPriorityThreshold; p != nil {
			v := *p
			n.Preemption.BorrowWithinCohort.MaxPriorityThreshold = &v
		}
		out.Nodes[i] = n
	}
	return out
}
