package k8s_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/k8s"
	"github.com/fleetsched/fleet/topology"
)

// Allocatable cpu, memory and extended resources become the nodes'
// resources in fleet units; what is not asked for is not read.
func TestImportResources(t *testing.T) {
	kube := "kind: List\nitems:\n" +
		"- metadata: {name: gpu-a, labels: {rack: r1}}\n" +
		"  status:\n" +
		"    allocatable: {nvidia.com/gpu: \"8\", cpu: 95500m, memory: 1Ti, example.com/nic: \"4\", pods: \"110\"}\n" +
		"    capacity: {nvidia.com/gpu: \"8\", cpu: \"96\", memory: 1Ti, hugepages-1Gi: \"16\"}\n" +
		"- metadata: {name: cpu-b, labels: {rack: r1}}\n" +
		"  status: {allocatable: {cpu: \"64\", memory: 256Gi}}\n"
	simple := "[{name: gpu-a, labels: {rack: r1}, gpus: 8, allocatable: {cpu: 95.5, memory: 1Ti, example.com/nic: 4}},\n" +
		" {name: cpu-b, labels: {rack: r1}, allocatable: {cpu: \"64\", memory: 256Gi}}]"
	const ti = int64(1) << 40
	cases := []struct {
		name    string
		input   string
		res     []string
		cpuOnly bool
		want    map[string]map[string]int64 // node -> resources; absent nodes left out
		warn    int                         // WarnNoGPUs count
	}{
		{"none asked: GPUs only", kube, nil, false, map[string]map[string]int64{"gpu-a": nil}, 1},
		{"cpu and memory", kube, k8s.CPUAndMemory(), false,
			map[string]map[string]int64{"gpu-a": {"cpu": 95500, "memory": ti}}, 1},
		{"an extended resource", kube, []string{"example.com/nic"}, false,
			map[string]map[string]int64{"gpu-a": {"example.com/nic": 4}}, 1},
		{"capacity for what allocatable lacks", kube, []string{"hugepages-1Gi"}, false,
			map[string]map[string]int64{"gpu-a": {"hugepages-1Gi": 16}}, 1},
		{"CPU-only nodes kept", kube, k8s.CPUAndMemory(), true,
			map[string]map[string]int64{"gpu-a": {"cpu": 95500, "memory": ti}, "cpu-b": {"cpu": 64000, "memory": 256 << 30}}, 0},
		{"CPU-only without resources asked: left out", kube, nil, true, map[string]map[string]int64{"gpu-a": nil}, 1},
		{"simple list", simple, append(k8s.CPUAndMemory(), "example.com/nic"), true,
			map[string]map[string]int64{"gpu-a": {"cpu": 95500, "memory": ti, "example.com/nic": 4}, "cpu-b": {"cpu": 64000, "memory": 256 << 30}}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nodes, err := k8s.ParseNodes([]byte(c.input), "")
			require.NoError(t, err)
			res, err := k8s.Import(nodes, k8s.Options{Levels: []k8s.Level{{Label: "rack", Name: "rack"}}, DefaultFlavor: "H100",
				Resources: c.res, CPUOnly: c.cpuOnly})
			require.NoError(t, err)
			got := map[string]map[string]int64{}
			for _, n := range res.Spec.Nodes {
				got[n.Name] = n.Resources
				if n.GPUs == 0 {
					require.Empty(t, n.Flavor, "a CPU-only node has no GPU model")
				}
			}
			require.Equal(t, c.want, got)
			warns := 0
			for _, w := range res.Warnings {
				if w.Kind == k8s.WarnNoGPUs {
					warns++
				}
			}
			require.Equal(t, c.warn, warns)
			_, err = topology.New(res.Spec)
			require.NoError(t, err)
		})
	}
}

// Bad quantities and bad options are typed errors naming the node and
// the resource.
func TestImportResourcesRefused(t *testing.T) {
	node := func(q string) string {
		return "kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {nvidia.com/gpu: \"8\", cpu: " + q + ", memory: 1Gi}}\n"
	}
	cases := []struct {
		name  string
		input string
		res   []string
		err   error
	}{
		{"negative cpu", node("\"-1\""), k8s.CPUAndMemory(), k8s.ErrBadResource},
		{"cpu beyond the bound", node("1e19"), k8s.CPUAndMemory(), k8s.ErrBadResource},
		{"cpu with a huge exponent", node("1e9999999"), k8s.CPUAndMemory(), k8s.ErrBadResource},
		{"not a quantity", node("lots"), k8s.CPUAndMemory(), k8s.ErrBadResource},
		{"a bad quantity not asked for is not read", node("lots"), []string{"memory"}, nil},
		{"empty name", node("\"1\""), []string{""}, k8s.ErrInvalidOptions},
		{"repeated name", node("\"1\""), []string{"cpu", "cpu"}, k8s.ErrInvalidOptions},
		{"the GPU resource", node("\"1\""), []string{"nvidia.com/gpu"}, k8s.ErrInvalidOptions},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nodes, err := k8s.ParseNodes([]byte(c.input), "")
			require.NoError(t, err)
			_, err = k8s.Import(nodes, k8s.Options{DefaultFlavor: "H100", Resources: c.res})
			if c.err == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, c.err)
			var ke *k8s.Error
			require.ErrorAs(t, err, &ke)
			if c.err == k8s.ErrBadResource {
				require.Equal(t, "n1", ke.Node)
				require.Contains(t, ke.Error(), "cpu")
			}
		})
	}
}
