package gang_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
)

func TestHelpers(t *testing.T) {
	tests := []struct {
		name      string
		podSets   []gang.PodSet
		gpus      int
		pods      int
		wholeNode bool // at 8 GPUs per node
	}{
		{"none", nil, 0, 0, false},
		{"replica 1 gpu", []gang.PodSet{{Name: "main", Count: 1, GPUsPerPod: 1}}, 1, 1, false},
		{"replica 8 gpus", []gang.PodSet{{Name: "main", Count: 1, GPUsPerPod: 8}}, 8, 1, true},
		{"gang 64x8", []gang.PodSet{{Name: "workers", Count: 64, GPUsPerPod: 8}}, 512, 64, true},
		{"launcher and workers", []gang.PodSet{
			{Name: "launcher", Count: 1, GPUsPerPod: 1},
			{Name: "workers", Count: 16, GPUsPerPod: 8},
		}, 129, 17, false},
		{"two whole-node sets", []gang.PodSet{
			{Name: "a", Count: 2, GPUsPerPod: 8},
			{Name: "b", Count: 3, GPUsPerPod: 8},
		}, 40, 5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := gang.Workload{PodSets: tt.podSets}
			assert.Equal(t, tt.gpus, w.GPUs())
			assert.Equal(t, tt.pods, w.Pods())
			assert.Equal(t, tt.wholeNode, w.WholeNode(8))
			assert.False(t, w.WholeNode(0), "unknown node size")
			assert.False(t, w.WholeNode(-8))
		})
	}
}

func TestSegmentedPodSet(t *testing.T) {
	tests := []struct {
		name string
		edit func(*gang.Workload)
		want int
	}{
		{"named", func(*gang.Workload) {}, 1},
		{"no segments", func(w *gang.Workload) { w.Topology.Segment = gang.Segment{} }, -1},
		{"unnamed among several", func(w *gang.Workload) { w.Topology.Segment.PodSet = "" }, -1},
		{"unknown name", func(w *gang.Workload) { w.Topology.Segment.PodSet = "x" }, -1},
		{"unnamed only set", func(w *gang.Workload) {
			w.PodSets = w.PodSets[1:]
			w.Topology.Segment.PodSet = ""
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := training()
			tt.edit(&w)
			assert.Equal(t, tt.want, w.SegmentedPodSet())
		})
	}
}

func TestCloneIsDeep(t *testing.T) {
	w := training()
	c := w.Clone()
	require.Equal(t, w, c)
	c.PodSets[0].Count = 99
	c.Pools[0] = "other"
	c.PodSets = append(c.PodSets, gang.PodSet{Name: "extra", Count: 1, GPUsPerPod: 1})
	assert.Equal(t, training(), w)

	var empty gang.Workload
	assert.Nil(t, empty.Clone().PodSets, "nil stays nil")
	assert.Nil(t, empty.Clone().Pools)
	empty.Pools = []string{}
	assert.NotNil(t, empty.Clone().Pools, "empty stays empty")
}

func TestHelpersDoNotAllocate(t *testing.T) {
	w := training()
	var sink int
	allocs := testing.AllocsPerRun(100, func() {
		sink += w.GPUs() + w.Pods() + w.SegmentedPodSet()
		if w.WholeNode(8) {
			sink++
		}
		sink += int(w.Drain.Unsaved(w.Drain.LastCheckpoint.Add(time.Hour), time.Time{}))
	})
	assert.Zero(t, allocs)
	assert.NotZero(t, sink)
}

func TestUnsaved(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		last       time.Time
		started    time.Time
		now        time.Time
		wantUnsave time.Duration
	}{
		{"never checkpointed", time.Time{}, t0, t0.Add(90 * time.Minute), 90 * time.Minute},
		{"checkpointed this run", t0.Add(time.Hour), t0, t0.Add(90 * time.Minute), 30 * time.Minute},
		{"checkpoint from an earlier run", t0.Add(-time.Hour), t0, t0.Add(10 * time.Minute), 10 * time.Minute},
		{"just checkpointed", t0.Add(time.Hour), t0, t0.Add(time.Hour), 0},
		{"clock before start", time.Time{}, t0, t0.Add(-time.Minute), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := gang.DrainContract{Preemptible: true, LastCheckpoint: tt.last}
			assert.Equal(t, tt.wantUnsave, d.Unsaved(tt.now, tt.started))
		})
	}
}
