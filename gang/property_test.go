package gang_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/gang"
)

// names draws from a small alphabet so that duplicates, empties and
// unknown level names all happen often.
var names = rapid.SampledFrom([]string{"", "a", "b", "spine", "leaf", "node", "rack"})

func anyInt() *rapid.Generator[int] {
	return rapid.OneOf(rapid.IntRange(-2, 20), rapid.SampledFrom([]int{gang.MaxGPUs, gang.MaxGPUs + 1, 1 << 62, -1 << 62}))
}

func anyDuration() *rapid.Generator[time.Duration] {
	return rapid.Custom(func(t *rapid.T) time.Duration {
		return time.Duration(rapid.Int64Range(-5, 5).Draw(t, "d")) * time.Minute
	})
}

// levelNames are fleet levels plus one no reference fleet has.
var levelNames = rapid.SampledFrom([]string{"", "spine", "leaf", "node", "rack"})

// workloadGen draws a well-formed workload, then half the time breaks one
// or two fields with arbitrary values, so that both verdicts of Validate
// are common and every rule gets exercised.
func workloadGen() *rapid.Generator[gang.Workload] {
	return rapid.Custom(func(t *rapid.T) gang.Workload {
		w := wellFormed(t)
		if rapid.Bool().Draw(t, "corrupt") {
			for range rapid.IntRange(1, 2).Draw(t, "corruptions") {
				corrupt(t, &w)
			}
		}
		return w
	})
}

func wellFormed(t *rapid.T) gang.Workload {
	n := rapid.IntRange(1, 3).Draw(t, "podSets")
	podSets := make([]gang.PodSet, n)
	for i := range podSets {
		podSets[i] = gang.PodSet{
			Name:       "ps" + strconv.Itoa(i),
			Count:      rapid.IntRange(1, 20).Draw(t, "count"),
			GPUsPerPod: rapid.SampledFrom([]int{1, 2, 4, 8, 16}).Draw(t, "gpusPerPod"),
		}
	}
	w := gang.Workload{
		ID:            rapid.SampledFrom([]string{"a", "b", "train-1"}).Draw(t, "id"),
		Queue:         rapid.SampledFrom([]string{"prod", "research"}).Draw(t, "queue"),
		Priority:      rapid.Int32().Draw(t, "priority"),
		PriorityClass: names.Draw(t, "class"),
		Shape:         gang.Shape(rapid.IntRange(1, 3).Draw(t, "shape")),
		PodSets:       podSets,
		Topology: gang.TopologyRequest{
			Required:  levelNames.Draw(t, "required"),
			Preferred: levelNames.Draw(t, "preferred"),
		},
		Flavor: names.Draw(t, "flavor"),
		Drain: gang.DrainContract{
			Preemptible:        rapid.Bool().Draw(t, "preemptible"),
			GracePeriod:        time.Duration(rapid.IntRange(0, 5).Draw(t, "grace")) * time.Minute,
			CheckpointInterval: time.Duration(rapid.IntRange(0, 5).Draw(t, "interval")) * time.Minute,
			LastCheckpoint:     time.Unix(rapid.Int64Range(0, 1e9).Draw(t, "last"), 0).UTC(),
		},
		ExpectedRuntime: time.Duration(rapid.IntRange(0, 5).Draw(t, "runtime")) * time.Hour,
	}
	if pools := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"p0", "p1", "p2"}), 0, 3, rapid.ID[string]).Draw(t, "pools"); len(pools) > 0 {
		w.Pools = pools // encoding/json omits empty pools, so none decodes as nil
	}
	if rapid.Bool().Draw(t, "segment") {
		i := rapid.IntRange(0, n-1).Draw(t, "segPodSet")
		count := podSets[i].Count
		var divisors []int
		for d := 1; d <= count; d++ {
			if count%d == 0 {
				divisors = append(divisors, d)
			}
		}
		w.Topology.Segment = gang.Segment{
			Size:  rapid.SampledFrom(divisors).Draw(t, "segSize"),
			Level: rapid.SampledFrom([]string{"spine", "leaf", "node", "rack"}).Draw(t, "segLevel"),
		}
		if n > 1 || rapid.Bool().Draw(t, "nameOnlyPodSet") {
			w.Topology.Segment.PodSet = podSets[i].Name
		}
	}
	if rapid.Bool().Draw(t, "rankGroups") {
		i := rapid.IntRange(0, n-1).Draw(t, "rankPodSet")
		size := 1
		for range rapid.IntRange(1, 3).Draw(t, "groups") {
			size *= rapid.SampledFrom([]int{1, 2, 3}).Draw(t, "factor")
			podSets[i].RankGroups = append(podSets[i].RankGroups, gang.RankGroup{Size: size,
				Level: levelNames.Draw(t, "rankLevel"), Required: rapid.Bool().Draw(t, "rankRequired")})
		}
	}
	if rapid.Bool().Draw(t, "spread") {
		w.Spread.MaxPerNode = rapid.IntRange(0, 3).Draw(t, "perNode")
		if d := rapid.IntRange(0, 3).Draw(t, "perDomain"); d > 0 {
			w.Spread.MaxPerDomain = d
			w.Spread.Level = rapid.SampledFrom([]string{"spine", "leaf", "node", "rack"}).Draw(t, "spreadLevel")
		}
	}
	return w
}

// corrupt sets one field, drawn at random, to an arbitrary value.
func corrupt(t *rapid.T, w *gang.Workload) {
	ps := func() *gang.PodSet {
		if len(w.PodSets) == 0 {
			return &gang.PodSet{} // an earlier corruption removed them all
		}
		return &w.PodSets[rapid.IntRange(0, len(w.PodSets)-1).Draw(t, "ps")]
	}
	switch rapid.IntRange(0, 17).Draw(t, "field") {
	case 0:
		w.ID = names.Draw(t, "id")
	case 1:
		w.Queue = names.Draw(t, "queue")
	case 2:
		w.Shape = gang.Shape(rapid.IntRange(0, 255).Draw(t, "shape"))
	case 3:
		if rapid.Bool().Draw(t, "nil") {
			w.PodSets = nil
		} else {
			w.PodSets = w.PodSets[:0]
		}
	case 4:
		ps().Name = names.Draw(t, "name")
	case 5:
		ps().Count = anyInt().Draw(t, "count")
	case 6:
		ps().GPUsPerPod = anyInt().Draw(t, "gpusPerPod")
	case 7:
		w.Topology.Segment.Size = anyInt().Draw(t, "segSize")
	case 8:
		w.Topology.Segment.Level = names.Draw(t, "segLevel")
	case 9:
		w.Topology.Segment.PodSet = names.Draw(t, "segPodSet")
	case 10:
		w.Pools = append(w.Pools, names.Draw(t, "pool"))
	case 11:
		w.Drain.GracePeriod = anyDuration().Draw(t, "grace")
	case 12:
		w.Drain.CheckpointInterval = anyDuration().Draw(t, "interval")
	case 13:
		w.ExpectedRuntime = anyDuration().Draw(t, "runtime")
	case 14:
		w.Spread.MaxPerNode = anyInt().Draw(t, "perNode")
	case 15:
		w.Spread.MaxPerDomain = anyInt().Draw(t, "perDomain")
	case 16:
		w.Spread.Level = names.Draw(t, "spreadLevel")
	case 17:
		p := ps()
		p.RankGroups = append(p.RankGroups, gang.RankGroup{Size: anyInt().Draw(t, "rankSize"), Level: names.Draw(t, "rankLevel")})
	}
}

// TestValidateProperties checks, on arbitrary workloads, that validation
// never panics, always answers with a *FieldError matching ErrInvalid,
// that a valid workload satisfies the invariants the other packages rely
// on, and that ValidateFor is at least as strict as Validate.
func TestValidateProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := workloadGen().Draw(t, "w")
		levels := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"spine", "leaf", "node", "rack"}), 0, 4,
			rapid.ID[string]).Draw(t, "levels")
		gpusPerNode := rapid.IntRange(-1, 16).Draw(t, "gpusPerNode")

		err := w.Validate()
		errFor := w.ValidateFor(levels, gpusPerNode)
		for _, e := range []error{err, errFor} {
			if e != nil {
				var fe *gang.FieldError
				require.ErrorAs(t, e, &fe)
				require.ErrorIs(t, e, gang.ErrInvalid)
				require.Equal(t, w.ID, fe.ID)
			}
		}
		if err != nil {
			require.Equal(t, err, errFor, "ValidateFor reports Validate's problem first")
			return
		}
		// A valid workload: the facts placement counts on.
		require.NotEmpty(t, w.ID)
		require.Positive(t, w.Pods())
		require.LessOrEqual(t, w.GPUs(), gang.MaxGPUs)
		seen := map[string]bool{}
		for _, p := range w.PodSets {
			require.Positive(t, p.Count)
			require.Positive(t, p.GPUsPerPod)
			require.False(t, seen[p.Name])
			seen[p.Name] = true
		}
		if s := w.Topology.Segment; s.Enabled() {
			i := w.SegmentedPodSet()
			require.GreaterOrEqual(t, i, 0)
			require.Zero(t, w.PodSets[i].Count%s.Size)
		}
		for _, p := range w.PodSets {
			for j, g := range p.RankGroups {
				require.Positive(t, g.Size)
				require.Zero(t, p.Count%g.Size, "rank group divides its pod set")
				if j > 0 {
					require.Zero(t, g.Size%p.RankGroups[j-1].Size, "rank groups nest")
					require.Greater(t, g.Size, p.RankGroups[j-1].Size)
				}
				if errFor == nil {
					require.Contains(t, levels, g.Level)
					if j > 0 {
						require.LessOrEqual(t, slices.Index(levels, g.Level), slices.Index(levels, p.RankGroups[j-1].Level), "rank group levels nest")
					}
				}
			}
			if p.RankGrouped() {
				require.Zero(t, w.Spread.MaxPerDomain)
			}
		}
		if errFor == nil && gpusPerNode > 0 {
			for _, p := range w.PodSets {
				require.LessOrEqual(t, p.GPUsPerPod, gpusPerNode)
			}
		}
		if errFor == nil {
			for _, l := range []string{w.Topology.Required, w.Topology.Preferred, w.Topology.Segment.Level, w.Spread.Level} {
				require.True(t, l == "" || slices.Contains(levels, l), "level %q", l)
			}
		}
		if errors.Is(errFor, gang.ErrUnknownLevel) {
			var fe *gang.FieldError
			require.ErrorAs(t, errFor, &fe)
			require.NotContains(t, levels, fe.Value)
		}
	})
}

// TestCloneProperties checks that Clone copies everything and shares no
// memory: scribbling over every slice of the clone leaves the original as
// its JSON said it was, and JSON round-trips a valid shape exactly.
func TestCloneProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := workloadGen().Draw(t, "w")
		w.Shape = gang.Shape(rapid.IntRange(1, 3).Draw(t, "shape")) // encodable
		before, err := json.Marshal(w)
		require.NoError(t, err)

		c := w.Clone()
		require.Equal(t, w, c)
		for i := range c.PodSets {
			for j := range c.PodSets[i].RankGroups {
				c.PodSets[i].RankGroups[j].Size = -7
			}
			c.PodSets[i] = gang.PodSet{Name: "changed", Count: -7, GPUsPerPod: -7}
		}
		for i := range c.Pools {
			c.Pools[i] = "changed"
		}
		c.PodSets = append(c.PodSets, gang.PodSet{Name: "more"})
		c.Pools = append(c.Pools, "more")
		c.Topology.Segment.Size++
		c.Drain.LastCheckpoint = c.Drain.LastCheckpoint.Add(time.Hour)

		after, err := json.Marshal(w)
		require.NoError(t, err)
		require.Equal(t, string(before), string(after))

		var back gang.Workload
		require.NoError(t, json.Unmarshal(before, &back))
		require.Equal(t, w, back)
	})
}
