package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/internal/packing"
)

// The program prints one table per mix with the four policies' rows.
func TestRunPrintsEveryMix(t *testing.T) {
	if testing.Short() {
		t.Skip("replays every mix")
	}
	var b bytes.Buffer
	require.NoError(t, run(&b, 1))
	out := b.String()
	for _, s := range []string{"mix default, seed 1", "mix spec33, seed 1", "\nfleet ", "\nbestfit ", "\nfirstfit ", "\nrandom "} {
		require.Contains(t, out, s)
	}
}

// With -trace the program reads the two lists from the folder and runs
// the protocol: here on a made-up fleet of three nodes and four pods of
// small shares, so that arrivals pass every requested percent.
func TestRunTraceReadsTheLists(t *testing.T) {
	dir := t.TempDir()
	nodes := "sn,cpu_milli,memory_mib,gpu,model\nn0,800000,16384,1,T4\nn1,4000,8192,0,\nn2,16000,32768,0,\n"
	pods := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n" +
		"p0,2000,10,1,5,,LS\np1,1000,0,1,10,T4|T4,LS\np2,4000,2048,0,0,,BE\np3,1000,1024,1,10,P100,LS\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, packing.OpenbNodes), []byte(nodes), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, packing.OpenbPods), []byte(pods), 0o644))
	spec, ws, err := packing.ReadOpenb(dir, false)
	require.NoError(t, err)
	require.Len(t, spec.Nodes, 3)
	require.Len(t, ws, 4)
	assert.Equal(t, 5, ws[0].PodSets[0].GPUShare)
	assert.Equal(t, []string{"T4"}, ws[1].Flavors, "a model listed twice is one flavor")
	assert.Len(t, ws[1].PodSets[0].Resources, 1, "no memory: 0 MiB is not asked")
	assert.True(t, ws[2].PodSets[0].NoGPU())
	var b bytes.Buffer
	require.NoError(t, runTrace(&b, dir, "default", 2, false, false))
	assert.Contains(t, b.String(), "openb (default): 3 nodes, 4 pods")
	assert.Contains(t, b.String(), "\n42 ")
	assert.Contains(t, b.String(), "\nmean ")
	_, err = packing.ReadOpenbPods(strings.NewReader("name,cpu\np,1\n"), false)
	require.Error(t, err)
	require.Error(t, runTrace(&b, dir, "gpuspec", 1, true, false), "models are ignored with -onegroup")
	require.Error(t, runTrace(&b, dir, "nosuch", 1, false, false))
}
