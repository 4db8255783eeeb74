package slurm

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Jobs of every shape submitted with sbatch run on exactly the nodes
// fleet chose.
func TestSlurmRunsOnChosenNodes(t *testing.T) {
	e := startCluster(t)
	hs := e.host(testConfig(""))
	long := e.script("long.sh", 0, 10*time.Minute)
	var ids []string
	for range 6 {
		ids = append(ids, e.sbatch("-p", "inference", "-N1", "--gres=gpu:2", long))
	}
	for range 2 {
		ids = append(ids, e.sbatch("-p", "research", "-N4", "--gres=gpu:8", "--requeue", long))
	}
	for range 8 {
		ids = append(ids, e.sbatch("-p", "batch", "-N1", "--gres=gpu:4", "--requeue", long))
	}
	js := e.jobs()
	for _, id := range ids {
		require.Equal(t, StatePending, js[id].State, "job %s", id)
		require.True(t, js[id].Held(), "job %s starts held", id)
	}
	js = hs.until(60*time.Second, "every job running", allRunning(ids...))
	for _, id := range ids {
		got := slices.Clone(js[id].NodeList)
		slices.Sort(got)
		assert.Equal(t, hs.admitted[id], got, "job %s runs where fleet placed it", id)
		assert.Len(t, got, js[id].Nodes, "job %s", id)
	}
}
