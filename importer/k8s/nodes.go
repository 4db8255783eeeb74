package k8s

import (
	"encoding/json"
	"fmt"
	"strconv"

	"sigs.k8s.io/yaml"

	"github.com/fleetsched/fleet/importer/internal/quantity"
	"github.com/fleetsched/fleet/importer/internal/yamldocs"
)

// MaxFileSize bounds the node lists ParseNodes reads.
const MaxFileSize = 64 << 20

// Node is one Kubernetes node as the importer needs it.
type Node struct {
	Name   string            `json:"name"`             // the node's name
	Labels map[string]string `json:"labels,omitempty"` // its labels
	// GPUs is the node's allocatable GPUs; 0 means "read the count label"
	// (nvidia.com/gpu.count), except for a node ParseNodes read from a
	// core/v1 Node whose status gave the resource: its 0 is a count.
	GPUs int `json:"gpus,omitempty"`
	// Allocatable is the node's allocatable resources as Kubernetes
	// quantities ("cpu": "95500m", "memory": "512Gi", extended resources),
	// read from status.allocatable (status.capacity for a resource
	// allocatable lacks). Import reads those Options.Resources names.
	Allocatable map[string]Quantity `json:"allocatable,omitempty"`
	// fromStatus is set when GPUs came from status.allocatable or
	// status.capacity, so a 0 there is not replaced by the label.
	fromStatus bool
}

// kubeNode is the part of a core/v1 Node that ParseNodes reads.
type kubeNode struct {
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Status struct {
		Allocatable map[string]json.RawMessage `json:"allocatable"`
		Capacity    map[string]json.RawMessage `json:"capacity"`
	} `json:"status"`
}

// ParseNodes reads a node list in YAML or JSON, in one of these shapes:
// a list of {name, labels, gpus}; an object {nodes: [...]} of the same;
// what `kubectl get nodes -o yaml` prints (a List or NodeList of core/v1
// Nodes); what `kubectl get node X -o yaml` prints (one Node); or a "---"
// stream of Nodes and Lists of Nodes, read in order. The GPUs of a core/v1
// Node are status.allocatable[resourceName] (then status.capacity) read as
// a Kubernetes quantity rounded up, as Kueue rounds. resourceName ""
// means nvidia.com/gpu. Errors are *Error wrapping ErrSyntax or ErrBadGPUs.
func ParseNodes(data []byte, resourceName string) ([]Node, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{Index: -1, Detail: "file too large", Err: ErrSyntax}
	}
	if resourceName == "" {
		resourceName = GPUResource
	}
	if docs := yamldocs.Split(data); len(docs) > 1 {
		return parseStream(docs, resourceName)
	}
	js, probe, err := toJSON(data)
	if err != nil {
		return nil, &Error{Index: -1, Detail: err.Error(), Err: ErrSyntax}
	}
	switch p := probe.(type) {
	case []any:
		return decodeSimple(js)
	case map[string]any:
		if raw, ok := p["nodes"]; ok && len(p) == 1 {
			inner, _ := json.Marshal(raw)
			return decodeSimple(inner)
		}
		if items, ok := kubeItems(p, js); ok {
			return decodeKube(items, resourceName)
		}
	}
	return nil, &Error{Index: -1, Detail: "want a list of nodes, {nodes: [...]}, a Kubernetes List or a Node", Err: ErrSyntax}
}

// parseStream reads a "---" stream whose documents are core/v1 Nodes or
// Lists of them; node indexes run across the whole stream.
func parseStream(docs []yamldocs.Doc, resourceName string) ([]Node, error) {
	var items []json.RawMessage
	for _, d := range docs {
		js, probe, err := toJSON(d.Body)
		if err != nil {
			return nil, &Error{Index: -1, Detail: fmt.Sprintf("document %d (line %d): %v", d.Index, d.Line, err), Err: ErrSyntax}
		}
		if probe == nil {
			continue // a document of comments only
		}
		p, _ := probe.(map[string]any)
		more, ok := kubeItems(p, js)
		if !ok {
			return nil, &Error{Index: -1, Detail: fmt.Sprintf("document %d (line %d): want a Node or a List of Nodes in a --- stream", d.Index, d.Line), Err: ErrSyntax}
		}
		items = append(items, more...)
	}
	return decodeKube(items, resourceName)
}

// toJSON converts one YAML or JSON document and decodes it loosely.
func toJSON(data []byte) ([]byte, any, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, err
	}
	var probe any
	if err := json.Unmarshal(js, &probe); err != nil {
		return nil, nil, err
	}
	return js, probe, nil
}

// kubeItems returns the core/v1 Nodes of a decoded document: the items of
// a List (or NodeList), or the document itself when it is a Node.
func kubeItems(p map[string]any, js []byte) ([]json.RawMessage, bool) {
	if p == nil {
		return nil, false
	}
	if _, ok := p["items"]; ok {
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(js, &list); err != nil {
			return nil, false
		}
		return list.Items, true
	}
	if p["kind"] == "Node" {
		return []json.RawMessage{js}, true
	}
	return nil, false
}

func decodeSimple(js []byte) ([]Node, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, &Error{Index: -1, Detail: err.Error(), Err: ErrSyntax}
	}
	out := make([]Node, len(raw))
	for i, r := range raw {
		if err := yaml.UnmarshalStrict(r, &out[i]); err != nil {
			var probe struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(r, &probe)
			return nil, &Error{Node: probe.Name, Index: i, Detail: err.Error(), Err: ErrSyntax}
		}
		if out[i].GPUs < 0 {
			return nil, &Error{Node: out[i].Name, Index: i, Detail: fmt.Sprintf("gpus=%d", out[i].GPUs), Err: ErrBadGPUs}
		}
	}
	return out, nil
}

func decodeKube(items []json.RawMessage, resourceName string) ([]Node, error) {
	out := make([]Node, len(items))
	for i, r := range items {
		var kn kubeNode
		if err := json.Unmarshal(r, &kn); err != nil {
			return nil, &Error{Index: i, Detail: err.Error(), Err: ErrSyntax}
		}
		n := Node{Name: kn.Metadata.Name, Labels: kn.Metadata.Labels}
		for _, m := range []map[string]json.RawMessage{kn.Status.Allocatable, kn.Status.Capacity} {
			for name, raw := range m {
				if _, seen := n.Allocatable[name]; seen || name == resourceName {
					continue
				}
				if n.Allocatable == nil {
					n.Allocatable = map[string]Quantity{}
				}
				n.Allocatable[name] = rawQuantity(raw)
			}
		}
		q, ok := kn.Status.Allocatable[resourceName]
		if !ok {
			q, ok = kn.Status.Capacity[resourceName]
		}
		if ok {
			g, err := gpuQuantity(q)
			if err != nil {
				return nil, &Error{Node: n.Name, Index: i, Detail: err.Error(), Err: ErrBadGPUs}
			}
			n.GPUs, n.fromStatus = g, true
		}
		out[i] = n
	}
	return out, nil
}

// maxNodeGPUs bounds one node's GPU count (topology's own bound).
const maxNodeGPUs = 1 << 20

// gpuQuantity reads a quantity written as a JSON string or number and
// rounds it up to whole GPUs, as Kueue's resource arithmetic does. The
// bound is checked on the exact value: apimachinery's Value() wraps or
// returns 0 past int64 ("1e19", "100E"), which would drop the node as one
// without GPUs.
func gpuQuantity(raw json.RawMessage) (int, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		s = string(raw)
	}
	q, err := quantity.Parse(s)
	if err != nil {
		return 0, fmt.Errorf("quantity %q: %v", s, err)
	}
	v, _, err := quantity.Ceil(q, maxNodeGPUs)
	if err != nil {
		return 0, fmt.Errorf("quantity %q: %w", s, err)
	}
	return int(v), nil
}

// countLabel reads nvidia.com/gpu.count.
func countLabel(v string) (int, bool) {
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 0 && n <= maxNodeGPUs
}
