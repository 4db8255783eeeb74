package k8s_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/internal/importtest"
	"github.com/fleetsched/fleet/importer/k8s"
	"github.com/fleetsched/fleet/topology"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func load(t *testing.T, name string) []k8s.Node {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	nodes, err := k8s.ParseNodes(b, "")
	require.NoError(t, err)
	return nodes
}

func render(t *testing.T, res *k8s.Result) string {
	var b strings.Builder
	b.WriteString(importtest.RenderSpec(t, res.Spec))
	for _, w := range res.Warnings {
		b.WriteString(w.String() + "\n")
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	tests := []struct{ file, preset, golden string }{
		{"gke_nodes.yaml", "gke", "gke.golden"},
		{"aws_nodes.json", "aws", "aws.golden"},
		{"topograph_v1.json", "topograph", "topograph_v1.golden"},
		{"topograph_v2.json", "topograph", "topograph_v2.golden"},
		{"topograph_v3.json", "topograph", "topograph_v3.golden"},
		{"topograph_v4.json", "topograph", "topograph_v4.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			nodes := load(t, tt.file)
			opts, err := k8s.Preset(tt.preset, nodes)
			require.NoError(t, err)
			res, err := k8s.Import(nodes, opts)
			require.NoError(t, err)
			importtest.Golden(t, tt.golden, render(t, res), *update)
		})
	}
}

// Domains are keyed by the path of values: sub-block "sb-1" under two
// blocks is two domains, as in Kueue.
func TestGKEPathKeys(t *testing.T) {
	res, err := k8s.Import(load(t, "gke_nodes.yaml"), k8s.GKE())
	require.NoError(t, err)
	f, err := topology.New(res.Spec)
	require.NoError(t, err)
	sub, ok := f.Level("subblock")
	require.True(t, ok)
	lo, hi := f.DomainsAt(sub)
	assert.Equal(t, 4, int(hi-lo))
	_, ok = f.Domain(sub, "b-91c2/sb-1")
	assert.True(t, ok)
	assert.Equal(t, 16*8, f.Stats(topology.Root, topology.AllGroups).GPUs)
	kinds := map[k8s.WarningKind]int{}
	for _, w := range res.Warnings {
		kinds[w.Kind]++
	}
	assert.Equal(t, map[k8s.WarningKind]int{k8s.WarnNoGPUs: 1, k8s.WarnMissingLabel: 1}, kinds)

	opts := k8s.GKE()
	opts.Strict = true
	_, err = k8s.Import(load(t, "gke_nodes.yaml"), opts)
	require.ErrorIs(t, err, k8s.ErrMissingLabel)
	var ke *k8s.Error
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "gke-a3u-pool-17", ke.Node)
}

func TestAWS(t *testing.T) {
	nodes := load(t, "aws_nodes.json")
	opts := k8s.AWS(nodes)
	require.Len(t, opts.Levels, 4) // a 4-layer instance type is present
	assert.Equal(t, "topology.k8s.aws/network-node-layer-1", opts.Levels[0].Label)
	res, err := k8s.Import(nodes, opts)
	require.NoError(t, err)
	assert.Equal(t, 8*8+4*4, sumGPUs(res.Spec))
	assert.Equal(t, "NVIDIA-GB200", res.Spec.Nodes[8].Flavor)

	// Only the 3-layer nodes: depth 3, nothing padded.
	res, err = k8s.Import(nodes[:8], k8s.AWS(nodes[:8]))
	require.NoError(t, err)
	assert.Equal(t, []string{"layer-1", "layer-2", "layer-3", "node"}, res.Spec.Levels)
	assert.Empty(t, res.Warnings)
}

func TestNVLink(t *testing.T) {
	mk := func(name, leaf, clique string) k8s.Node {
		l := map[string]string{"rack": leaf}
		if clique != "" {
			l[k8s.CliqueLabel] = clique
		}
		return k8s.Node{Name: name, Labels: l, GPUs: 4}
	}
	opts := k8s.Options{Levels: []k8s.Level{{"rack", "rack"}}, NVLinkLabel: k8s.CliqueLabel, DefaultFlavor: "H100"}

	// One clique per rack: the rack is the NVLink level.
	res, err := k8s.Import([]k8s.Node{mk("a", "r1", "u1.1"), mk("b", "r1", "u1.1"), mk("c", "r2", "u2.1")}, opts)
	require.NoError(t, err)
	assert.Equal(t, "rack", res.Spec.NVLink)

	// Two cliques in a rack: a new level below it.
	res, err = k8s.Import([]k8s.Node{mk("a", "r1", "u1.1"), mk("b", "r1", "u1.2"), mk("c", "r2", "")}, opts)
	require.NoError(t, err)
	assert.Equal(t, []string{"rack", "nvlink", "node"}, res.Spec.Levels)
	assert.Equal(t, "nvlink", res.Spec.NVLink)
	assert.Equal(t, []string{"r2", "r2/~c"}, res.Spec.Nodes[2].Path)

	// A clique across racks is not a level: a label and a warning, or an error.
	across := []k8s.Node{mk("a", "r1", "u1.1"), mk("b", "r2", "u1.1")}
	res, err = k8s.Import(across, opts)
	require.NoError(t, err)
	assert.Equal(t, "", res.Spec.NVLink)
	assert.Equal(t, "u1.1", res.Spec.Nodes[1].Labels[k8s.CliqueLabel])
	require.Len(t, res.Warnings, 1)
	assert.Equal(t, k8s.WarnNotNested, res.Warnings[0].Kind)
	opts.Strict = true
	_, err = k8s.Import(across, opts)
	require.ErrorIs(t, err, k8s.ErrNotNested)
}

func TestImportErrors(t *testing.T) {
	opts := k8s.Options{Levels: []k8s.Level{{"rack", "rack"}}}
	n := func(name string, gpus int, labels ...string) k8s.Node {
		l := map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		return k8s.Node{Name: name, GPUs: gpus, Labels: l}
	}
	tests := []struct {
		name  string
		nodes []k8s.Node
		opts  k8s.Options
		want  error
	}{
		{"duplicate", []k8s.Node{n("a", 8, "rack", "r"), n("a", 8, "rack", "r")}, opts, k8s.ErrDuplicateNode},
		{"no name", []k8s.Node{n("", 8, "rack", "r")}, opts, k8s.ErrNoName},
		{"bad count label", []k8s.Node{n("a", 0, "rack", "r", k8s.CountLabel, "eight")}, opts, k8s.ErrBadGPUs},
		{"nothing placed", []k8s.Node{n("a", 8)}, opts, k8s.ErrNoNodes},
		{"bad level", []k8s.Node{n("a", 8)}, k8s.Options{Levels: []k8s.Level{{"x", "node"}}}, k8s.ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := k8s.Import(tt.nodes, tt.opts)
			require.ErrorIs(t, err, tt.want)
			var ke *k8s.Error
			require.ErrorAs(t, err, &ke)
		})
	}
	_, err := k8s.Preset("azure", nil)
	require.ErrorIs(t, err, k8s.ErrUnknownPreset)
}

func TestParseNodes(t *testing.T) {
	nodes, err := k8s.ParseNodes([]byte(`{"nodes": [{"name": "a", "gpus": 8}]}`), "")
	require.NoError(t, err)
	assert.Equal(t, []k8s.Node{{Name: "a", GPUs: 8}}, nodes)

	// Quantities round up, as Kueue rounds.
	nodes, err = k8s.ParseNodes([]byte("kind: List\nitems:\n- metadata: {name: a}\n  status: {allocatable: {nvidia.com/gpu: 500m}}\n"), "")
	require.NoError(t, err)
	assert.Equal(t, 1, nodes[0].GPUs)

	for _, bad := range []string{
		"- name: a\n  gpu: 8\n",   // unknown field
		"- name: a\n  gpus: -1\n", // negative
		"kind: List\nitems:\n- metadata: {name: a}\n  status: {allocatable: {nvidia.com/gpu: 1K}}\n",
		"just a string",
		"- [",
	} {
		_, err := k8s.ParseNodes([]byte(bad), "")
		require.Error(t, err, bad)
		var ke *k8s.Error
		require.ErrorAs(t, err, &ke, bad)
	}
}

func sumGPUs(s topology.Spec) int {
	n := 0
	for _, x := range s.Nodes {
		n += x.GPUs
	}
	return n
}

func FuzzImport(f *testing.F) {
	for _, name := range []string{"gke_nodes.yaml", "aws_nodes.json", "topograph_v4.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "gke", false)
		f.Add(b, "aws", true)
		f.Add(b, "topograph", false)
	}
	// One Node and a --- stream of Nodes and a List.
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: a, labels: {cloud.google.com/gce-topology-block: b}}\nstatus: {allocatable: {nvidia.com/gpu: \"8\"}}\n"
	f.Add([]byte(node), "gke", false)
	f.Add([]byte(node+"---\nkind: List\nitems:\n- metadata: {name: b}\n  status: {capacity: {nvidia.com/gpu: 1e19}}\n"), "gke", true)
	// Allocatable cpu, memory and an extended resource; a CPU-only node.
	res := "kind: List\nitems:\n- metadata: {name: a, labels: {cloud.google.com/gce-topology-block: b}}\n" +
		"  status: {allocatable: {nvidia.com/gpu: 8, cpu: 95500m, memory: 1Ti, example.com/nic: \"4\"}}\n" +
		"- metadata: {name: c, labels: {cloud.google.com/gce-topology-block: b}}\n  status: {allocatable: {cpu: \"64\", memory: -1}}\n"
	f.Add([]byte(res), "gke", false)
	f.Add([]byte(res), "gke", true)
	f.Add([]byte("[{name: a, gpus: 8, allocatable: {cpu: 96, memory: 512Gi}}, {name: b, allocatable: {cpu: 1e20}}]"), "gke", false)
	// Quantities with a huge exponent, refused before any exact arithmetic.
	f.Add([]byte(node+"---\nkind: List\nitems:\n- metadata: {name: b}\n  status: {capacity: {nvidia.com/gpu: 1e9999999}}\n"), "gke", false)
	f.Add([]byte("[{name: a, gpus: 8, allocatable: {cpu: 1e9999999, memory: 1e-9999999}}]"), "gke", false)
	f.Fuzz(func(t *testing.T, data []byte, preset string, strict bool) {
		if len(data) > 1<<16 {
			return
		}
		nodes, err := k8s.ParseNodes(data, "")
		if err != nil {
			var ke *k8s.Error
			if !errors.As(err, &ke) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		opts, err := k8s.Preset(preset, nodes)
		if err != nil {
			return
		}
		opts.Strict = strict
		opts.Resources, opts.CPUOnly = append(k8s.CPUAndMemory(), "example.com/nic"), !strict
		res, err := k8s.Import(nodes, opts)
		if err != nil {
			var ke *k8s.Error
			var se *topology.SpecError
			if !errors.As(err, &ke) && !errors.As(err, &se) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if _, err := topology.New(res.Spec); err != nil {
			t.Fatal(err)
		}
	})
}
