package gang_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
)

var refLevels = []string{"spine", "leaf", "node"}

// training returns a valid 2-pod-set training workload: a launcher and
// 16 x 8-GPU workers in segments of 8 per leaf, under one spine.
func training() gang.Workload {
	return gang.Workload{
		ID:       "train-1",
		Queue:    "research",
		Priority: 500,
		Shape:    gang.Training,
		PodSets: []gang.PodSet{
			{Name: "launcher", Count: 1, GPUsPerPod: 1},
			{Name: "workers", Count: 16, GPUsPerPod: 8},
		},
		Topology: gang.TopologyRequest{
			Required:  "spine",
			Preferred: "leaf",
			Segment:   gang.Segment{Size: 8, Level: "leaf", PodSet: "workers"},
		},
		Flavor: "H100",
		Pools:  []string{"reserved", "shared"},
		Drain: gang.DrainContract{
			Preemptible:        true,
			GracePeriod:        2 * time.Minute,
			CheckpointInterval: 30 * time.Minute,
			LastCheckpoint:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		},
		ExpectedRuntime: 48 * time.Hour,
	}
}

// replica returns a valid inference replica with a spread limit.
func replica() gang.Workload {
	return gang.Workload{
		ID: "chat-7", Queue: "prod", Priority: 1000, Shape: gang.Inference,
		PodSets: []gang.PodSet{{Name: "main", Count: 4, GPUsPerPod: 2}},
		Spread:  gang.Spread{MaxPerNode: 1, MaxPerDomain: 2, Level: "leaf"},
	}
}

func TestValidateAcceptsValid(t *testing.T) {
	for _, tt := range []struct {
		name string
		w    gang.Workload
	}{
		{"training", training()},
		{"replica", replica()},
		{"preferred without required", func() gang.Workload {
			w := replica()
			w.Topology.Preferred = "leaf"
			return w
		}()},
		{"segment of the only pod set", func() gang.Workload {
			w := replica()
			w.Topology.Segment = gang.Segment{Size: 2, Level: "leaf"}
			return w
		}()},
		{"segment at the required level", func() gang.Workload {
			w := training()
			w.Topology.Segment.Level = "spine"
			return w
		}()},
		{"segment of one node", func() gang.Workload {
			w := replica()
			w.Topology.Segment = gang.Segment{Size: 4, Level: "node"}
			return w
		}()},
		{"required node that fits", func() gang.Workload {
			w := replica()
			w.Topology.Required = "node"
			w.Spread = gang.Spread{}
			return w
		}()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.w.Validate())
			require.NoError(t, tt.w.ValidateFor(refLevels, 8))
		})
	}
}

func TestValidateRefuses(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*gang.Workload)
		field  string
		value  any
		forCtx bool // found only by ValidateFor
		err    error
	}{
		{"empty id", func(w *gang.Workload) { w.ID = "" }, "id", "", false, gang.ErrInvalid},
		{"empty queue", func(w *gang.Workload) { w.Queue = "" }, "queue", "", false, gang.ErrInvalid},
		{"unset shape", func(w *gang.Workload) { w.Shape = 0 }, "shape", gang.Shape(0), false, gang.ErrInvalid},
		{"unknown shape", func(w *gang.Workload) { w.Shape = 9 }, "shape", gang.Shape(9), false, gang.ErrInvalid},
		{"no pod sets", func(w *gang.Workload) { w.PodSets = nil }, "podSets", 0, false, gang.ErrInvalid},
		{"empty pod set name", func(w *gang.Workload) { w.PodSets[1].Name = "" }, "podSets[1].name", "", false, gang.ErrInvalid},
		{"zero count", func(w *gang.Workload) { w.PodSets[1].Count = 0 }, "podSets[1].count", 0, false, gang.ErrInvalid},
		{"negative count", func(w *gang.Workload) { w.PodSets[0].Count = -3 }, "podSets[0].count", -3, false, gang.ErrInvalid},
		{"huge count", func(w *gang.Workload) { w.PodSets[0].Count = gang.MaxGPUs + 1 }, "podSets[0].count", gang.MaxGPUs + 1, false, gang.ErrInvalid},
		{"zero gpus per pod", func(w *gang.Workload) { w.PodSets[1].GPUsPerPod = 0 }, "podSets[1].gpusPerPod", 0, false, gang.ErrInvalid},
		{"huge gpus per pod", func(w *gang.Workload) { w.PodSets[1].GPUsPerPod = gang.MaxGPUs + 1 }, "podSets[1].gpusPerPod", gang.MaxGPUs + 1, false, gang.ErrInvalid},
		{"too many gpus in total", func(w *gang.Workload) { w.PodSets[1].Count = gang.MaxGPUs / 8 }, "podSets[1].count", gang.MaxGPUs / 8, false, gang.ErrInvalid},
		{"duplicate pod set", func(w *gang.Workload) { w.PodSets[1].Name = "launcher" }, "podSets[1].name", "launcher", false, gang.ErrInvalid},
		{"negative segment", func(w *gang.Workload) { w.Topology.Segment.Size = -1 }, "topology.segment.size", -1, false, gang.ErrInvalid},
		{"segment level without size", func(w *gang.Workload) { w.Topology.Segment.Size = 0 }, "topology.segment.size", 0, false, gang.ErrInvalid},
		{"segment without level", func(w *gang.Workload) { w.Topology.Segment.Level = "" }, "topology.segment.level", "", false, gang.ErrInvalid},
		{"segment pod set ambiguous", func(w *gang.Workload) { w.Topology.Segment.PodSet = "" }, "topology.segment.podSet", "", false, gang.ErrInvalid},
		{"segment pod set unknown", func(w *gang.Workload) { w.Topology.Segment.PodSet = "ps" }, "topology.segment.podSet", "ps", false, gang.ErrInvalid},
		{"segment not dividing", func(w *gang.Workload) { w.Topology.Segment.Size = 5 }, "topology.segment.size", 5, false, gang.ErrInvalid},
		{"empty pool", func(w *gang.Workload) { w.Pools[1] = "" }, "pools[1]", "", false, gang.ErrInvalid},
		{"duplicate pool", func(w *gang.Workload) { w.Pools[1] = "reserved" }, "pools[1]", "reserved", false, gang.ErrInvalid},
		{"negative grace", func(w *gang.Workload) { w.Drain.GracePeriod = -time.Second }, "drain.gracePeriod", -time.Second, false, gang.ErrInvalid},
		{"negative checkpoint interval", func(w *gang.Workload) { w.Drain.CheckpointInterval = -1 }, "drain.checkpointInterval", time.Duration(-1), false, gang.ErrInvalid},
		{"negative runtime", func(w *gang.Workload) { w.ExpectedRuntime = -time.Hour }, "expectedRuntime", -time.Hour, false, gang.ErrInvalid},
		{"negative per node", func(w *gang.Workload) { w.Spread.MaxPerNode = -1 }, "spread.maxPerNode", -1, false, gang.ErrInvalid},
		{"negative per domain", func(w *gang.Workload) { w.Spread = gang.Spread{MaxPerDomain: -1} }, "spread.maxPerDomain", -1, false, gang.ErrInvalid},
		{"per domain without level", func(w *gang.Workload) { w.Spread = gang.Spread{MaxPerDomain: 2} }, "spread.level", "", false, gang.ErrInvalid},
		{"spread level without limit", func(w *gang.Workload) { w.Spread = gang.Spread{Level: "leaf"} }, "spread.maxPerDomain", 0, false, gang.ErrInvalid},

		{"unknown required", func(w *gang.Workload) { w.Topology.Required = "rack" }, "topology.required", "rack", true, gang.ErrUnknownLevel},
		{"unknown preferred", func(w *gang.Workload) { w.Topology.Preferred = "rack" }, "topology.preferred", "rack", true, gang.ErrUnknownLevel},
		{"unknown segment level", func(w *gang.Workload) { w.Topology.Segment.Level = "rack" }, "topology.segment.level", "rack", true, gang.ErrUnknownLevel},
		{"unknown spread level", func(w *gang.Workload) { w.Spread = gang.Spread{MaxPerDomain: 1, Level: "rack"} }, "spread.level", "rack", true, gang.ErrUnknownLevel},
		{"preferred above required", func(w *gang.Workload) {
			w.Topology.Required, w.Topology.Preferred = "leaf", "spine"
			w.Topology.Segment.Level = "node"
			w.PodSets[1].GPUsPerPod = 1
		}, "topology.preferred", "spine", true, gang.ErrInvalid},
		{"segment above required", func(w *gang.Workload) {
			w.Topology.Required, w.Topology.Preferred = "leaf", ""
			w.Topology.Segment.Level = "spine"
		}, "topology.segment.level", "spine", true, gang.ErrInvalid},
		{"spread at required", func(w *gang.Workload) { w.Spread = gang.Spread{MaxPerDomain: 1, Level: "spine"} }, "spread.level", "spine", true, gang.ErrInvalid},
		{"pod above node", func(w *gang.Workload) { w.PodSets[1].GPUsPerPod = 16 }, "podSets[1].gpusPerPod", 16, true, gang.ErrExceedsNode},
		{"required node too small", func(w *gang.Workload) { w.Topology = gang.TopologyRequest{Required: "node"} }, "topology.required", "node", true, gang.ErrExceedsNode},
		{"node segment too big", func(w *gang.Workload) { w.Topology.Segment = gang.Segment{Size: 2, Level: "node", PodSet: "workers"} }, "topology.segment.size", 2, true, gang.ErrExceedsNode},
		{"rank group of zero", ranks(gang.RankGroup{Size: 0, Level: "leaf"}), "podSets[1].rankGroups[0].size", 0, false, gang.ErrBadRankGroup},
		{"rank group larger than its pod set", ranks(gang.RankGroup{Size: 32, Level: "leaf"}), "podSets[1].rankGroups[0].size", 32, false, gang.ErrBadRankGroup},
		{"rank group not dividing", ranks(gang.RankGroup{Size: 3, Level: "leaf"}), "podSets[1].rankGroups[0].size", 3, false, gang.ErrBadRankGroup},
		{"rank group without level", ranks(gang.RankGroup{Size: 4}), "podSets[1].rankGroups[0].level", "", false, gang.ErrBadRankGroup},
		{"rank groups not nesting", ranks(gang.RankGroup{Size: 4, Level: "leaf"}, gang.RankGroup{Size: 2, Level: "spine"}), "podSets[1].rankGroups[1].size", 2, false, gang.ErrBadRankGroup},
		{"rank groups not multiples", ranks(gang.RankGroup{Size: 2, Level: "node"}, gang.RankGroup{Size: 8, Level: "leaf"}, gang.RankGroup{Size: 16, Level: "spine"}, gang.RankGroup{Size: 16, Level: "spine"}), "podSets[1].rankGroups[3].size", 16, false, gang.ErrBadRankGroup},
		{"rank groups on a segmented pod set", func(w *gang.Workload) { w.PodSets[1].RankGroups = []gang.RankGroup{{Size: 8, Level: "leaf"}} }, "podSets[1].rankGroups", 1, false, gang.ErrBadRankGroup},
		{"rank groups with a per-domain spread", func(w *gang.Workload) {
			ranks(gang.RankGroup{Size: 8, Level: "leaf"})(w)
			w.Spread = gang.Spread{MaxPerDomain: 8, Level: "leaf"}
		}, "podSets[1].rankGroups", 1, false, gang.ErrBadRankGroup},
		{"unknown rank group level", ranks(gang.RankGroup{Size: 8, Level: "rack"}), "podSets[1].rankGroups[0].level", "rack", true, gang.ErrUnknownLevel},
		{"rank group below the one before", ranks(gang.RankGroup{Size: 4, Level: "leaf"}, gang.RankGroup{Size: 8, Level: "node"}), "podSets[1].rankGroups[1].level", "node", true, gang.ErrBadRankGroup},
		{"node rank group too big", ranks(gang.RankGroup{Size: 2, Level: "node"}), "podSets[1].rankGroups[0].size", 2, true, gang.ErrExceedsNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := training()
			tt.edit(&w)
			err := w.ValidateFor(refLevels, 8)
			if tt.forCtx {
				require.NoError(t, w.Validate(), "context-free validation must pass")
			} else {
				require.Equal(t, err, w.Validate(), "ValidateFor starts with Validate")
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, gang.ErrInvalid)
			assert.ErrorIs(t, err, tt.err)
			var fe *gang.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, w.ID, fe.ID)
			assert.Equal(t, tt.field, fe.Field)
			assert.Equal(t, tt.value, fe.Value)
			assert.NotEmpty(t, fe.Detail)
			assert.Contains(t, err.Error(), "gang: ")
			assert.Contains(t, err.Error(), tt.field)
		})
	}
}

// ranks replaces the workers' segment by the given rank groups.
func ranks(g ...gang.RankGroup) func(*gang.Workload) {
	return func(w *gang.Workload) {
		w.Topology.Segment = gang.Segment{}
		w.PodSets[1].RankGroups = g
	}
}

func TestValidateAcceptsRankGroups(t *testing.T) {
	w := training()
	ranks(gang.RankGroup{Size: 1, Level: "node", Required: true}, gang.RankGroup{Size: 8, Level: "leaf", Required: true},
		gang.RankGroup{Size: 16, Level: "leaf"})(&w)
	w.PodSets[0].RankGroups = []gang.RankGroup{{Size: 1, Level: "spine"}}
	require.NoError(t, w.ValidateFor(refLevels, 8))
	require.NoError(t, w.ValidateFor(refLevels, 0))
	c := w.Clone()
	c.PodSets[1].RankGroups[0].Size = 99
	assert.Equal(t, 1, w.PodSets[1].RankGroups[0].Size, "Clone shares rank groups")
	assert.True(t, w.PodSets[1].RankGrouped())
}

func TestValidateNil(t *testing.T) {
	var w *gang.Workload
	assert.ErrorIs(t, w.Validate(), gang.ErrInvalid)
	assert.ErrorIs(t, w.ValidateFor(refLevels, 8), gang.ErrInvalid)
	assert.Equal(t, "gang: invalid workload: nil workload", w.Validate().Error())
}

func TestValidateForUnknownNodeSize(t *testing.T) {
	w := training()
	w.PodSets[1].GPUsPerPod = 64 // skipped: the node size is unknown
	require.NoError(t, w.ValidateFor(refLevels, 0))
	require.ErrorIs(t, w.ValidateFor(nil, 0), gang.ErrUnknownLevel)

	r := replica()
	r.Spread = gang.Spread{}
	require.NoError(t, r.ValidateFor(nil, 8), "no level named, none needed")
}

func TestFieldErrorMessage(t *testing.T) {
	w := training()
	w.PodSets[1].GPUsPerPod = 0
	assert.Equal(t,
		`gang: invalid workload: workload "train-1": podSets[1].gpusPerPod = 0: must be at least 1, or the pod must ask for a share, a MIG slice or resources`,
		w.Validate().Error())

	w = training()
	w.Topology.Required = "rack"
	assert.Equal(t,
		`gang: unknown topology level: workload "train-1": topology.required = "rack": the fleet's levels are ["spine" "leaf" "node"]`,
		w.ValidateFor(refLevels, 8).Error())
	assert.False(t, errors.Is(w.Validate(), gang.ErrUnknownLevel))
}

func TestValidateSharingAndResources(t *testing.T) {
	ok := func(mut func(p *gang.PodSet)) error {
		w := replica()
		mut(&w.PodSets[0])
		return w.Validate()
	}
	require.NoError(t, ok(func(p *gang.PodSet) { p.GPUsPerPod, p.GPUShare = 0, 500 }))
	require.NoError(t, ok(func(p *gang.PodSet) { p.GPUsPerPod, p.GPUShare = 0, 1000 }))
	require.NoError(t, ok(func(p *gang.PodSet) { p.GPUsPerPod, p.MIG = 0, "1g.10gb" }))
	require.NoError(t, ok(func(p *gang.PodSet) {
		p.GPUsPerPod, p.Resources = 0, []gang.Resource{{Name: "cpu", Amount: 4000}}
	}), "a CPU-only pod set is valid")
	require.NoError(t, ok(func(p *gang.PodSet) { p.MinCount = 2 }))
	for _, tt := range []struct {
		name string
		mut  func(p *gang.PodSet)
		want error
	}{
		{"share above one GPU", func(p *gang.PodSet) { p.GPUsPerPod, p.GPUShare = 0, 1001 }, gang.ErrBadShare},
		{"negative share", func(p *gang.PodSet) { p.GPUsPerPod, p.GPUShare = 0, -1 }, gang.ErrBadShare},
		{"share and whole GPUs", func(p *gang.PodSet) { p.GPUShare = 500 }, gang.ErrBadShare},
		{"share and MIG", func(p *gang.PodSet) { p.GPUsPerPod, p.GPUShare, p.MIG = 0, 500, "1g.10gb" }, gang.ErrBadShare},
		{"min above count", func(p *gang.PodSet) { p.MinCount = p.Count + 1 }, gang.ErrBadMinCount},
		{"negative min", func(p *gang.PodSet) { p.MinCount = -1 }, gang.ErrBadMinCount},
		{"empty resource name", func(p *gang.PodSet) { p.Resources = []gang.Resource{{Amount: 1}} }, gang.ErrBadResource},
		{"zero resource", func(p *gang.PodSet) { p.Resources = []gang.Resource{{Name: "cpu"}} }, gang.ErrBadResource},
		{"repeated resource", func(p *gang.PodSet) {
			p.Resources = []gang.Resource{{Name: "cpu", Amount: 1}, {Name: "cpu", Amount: 2}}
		}, gang.ErrBadResource},
		{"nothing asked", func(p *gang.PodSet) { p.GPUsPerPod = 0 }, gang.ErrInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ok(tt.mut)
			require.ErrorIs(t, err, tt.want)
			require.ErrorIs(t, err, gang.ErrInvalid)
			var fe *gang.FieldError
			require.ErrorAs(t, err, &fe)
		})
	}
}

func TestFlavorSets(t *testing.T) {
	w := replica()
	w.Flavors = []string{"H100", "A100"}
	require.NoError(t, w.Validate())
	r, ok := w.Accepts("A100")
	require.True(t, ok)
	require.Equal(t, 1, r)
	_, ok = w.Accepts("L4")
	require.False(t, ok)
	w.Flavors = []string{"H100", "H100"}
	require.ErrorIs(t, w.Validate(), gang.ErrInvalid)
	w.Flavors, w.Flavor = []string{"H100"}, "A100"
	require.ErrorIs(t, w.Validate(), gang.ErrInvalid)
	c := w.Clone()
	c.Flavors[0] = "x"
	require.Equal(t, "H100", w.Flavors[0])
}
