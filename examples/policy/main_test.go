package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBundled(t *testing.T) {
	var out, errOut strings.Builder
	require.Equal(t, 1, run([]string{"-fail"}, &out, &errOut), errOut.String())
	s := out.String()
	assert.Contains(t, s, "| h100   | 2048       | 2048     | 0                       |")
	assert.Contains(t, s, "## Problems: 2")
	assert.Contains(t, s, `ResourceFlavor "a100": no node of examples/policy/testdata/topology.conf has this flavor`)
	assert.Contains(t, s, `flavor "a100": guarantees 64 GPUs, the fleet has 0; nominal quota held by ClusterQueue "legacy-a100" (line 139, 64)`)
	assert.Contains(t, s, "free 2048/2048 GPUs")
}

func TestCycle(t *testing.T) {
	var out, errOut strings.Builder
	require.Equal(t, 0, run([]string{"-kueue", "testdata/cycle.yaml"}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), `cycle.yaml: kueue: cohort cycle: line 2: Cohort "east": spec.parentName: cycle through east, west`)
	assert.NotContains(t, out.String(), "## Policy")
}

func TestNodeList(t *testing.T) {
	var out, errOut strings.Builder
	require.Equal(t, 0, run([]string{"-topology", "../../importer/k8s/testdata/gke_nodes.yaml", "-kueue", "testdata/cycle.yaml"}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "levels block > subblock > host > node")
	assert.Contains(t, out.String(), `warning no-gpus: node "gke-system-01"`)
}
