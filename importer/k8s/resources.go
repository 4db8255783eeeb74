package k8s

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/fleetsched/fleet/importer/internal/quantity"
)

// Quantity is a Kubernetes resource quantity as written ("96", "95500m",
// "512Gi"). In YAML or JSON it may be a string or a number.
type Quantity string

// UnmarshalJSON accepts a JSON string or number.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*q = Quantity(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("want a quantity, got %s", b)
	}
	*q = Quantity(n)
	return nil
}

// rawQuantity is a status field's quantity as written, string or number.
func rawQuantity(raw json.RawMessage) Quantity {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return Quantity(s)
	}
	return Quantity(raw)
}

// CPUAndMemory is the Options.Resources that reads allocatable cpu and
// memory.
func CPUAndMemory() []string { return []string{"cpu", "memory"} }

// checkResources refuses Options.Resources with an empty, repeated or GPU
// name.
func checkResources(names []string) error {
	for i, r := range names {
		if r == "" || r == GPUResource || slices.Contains(names[:i], r) {
			return &Error{Index: -1, Detail: fmt.Sprintf("resource %q: names must be set, unique and not %s", r, GPUResource), Err: ErrInvalidOptions}
		}
	}
	return nil
}

// nodeResources converts node n's allocatable quantities of the names
// asked into fleet units (cpu in millicores, memory in bytes, extended
// resources as counts, rounded up); a resource the node lacks, or has 0
// of, is left out.
func nodeResources(n *Node, i int, names []string) (map[string]int64, error) {
	var out map[string]int64
	for _, r := range names {
		q, ok := n.Allocatable[r]
		if !ok {
			continue
		}
		v, err := quantity.ParseAmount(r, string(q))
		if err != nil {
			return nil, &Error{Node: n.Name, Index: i, Detail: fmt.Sprintf("allocatable %s=%q: %v", r, string(q), err), Err: ErrBadResource}
		}
		if v == 0 {
			continue
		}
		if out == nil {
			out = map[string]int64{}
		}
		out[r] = v
	}
	return out, nil
}
