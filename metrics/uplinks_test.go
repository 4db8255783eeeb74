package metrics_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/metrics"
)

// Per leaf, the gangs crossing it: time-weighted over the window (each
// snapshot holds until the next), the most at once, and the latest
// snapshot's count for gauges.
func TestUplinksPerLeaf(t *testing.T) {
	cross := func(d time.Duration, cs ...fleet.LeafCrossings) fleet.Snapshot {
		return fleet.Snapshot{Time: at(d), Fleet: fleet.FleetView{HealthyGPUs: 64, Crossings: cs}}
	}
	cases := []struct {
		name  string
		snaps []fleet.Snapshot
		want  []metrics.LeafUplinks
		now   []fleet.LeafCrossings
	}{
		{name: "no gang crosses a leaf", snaps: []fleet.Snapshot{cross(0), cross(time.Hour)}},
		{
			name: "one gang over two leaves for the first hour",
			snaps: []fleet.Snapshot{
				cross(0, fleet.LeafCrossings{Leaf: "leaf-0", Gangs: 1}, fleet.LeafCrossings{Leaf: "leaf-1", Gangs: 1}),
				cross(time.Hour),
				cross(2 * time.Hour),
			},
			want: []metrics.LeafUplinks{{Leaf: "leaf-0", Avg: 0.5, Max: 1}, {Leaf: "leaf-1", Avg: 0.5, Max: 1}},
		},
		{
			name: "a second gang shares leaf 1 in the second hour",
			snaps: []fleet.Snapshot{
				cross(0, fleet.LeafCrossings{Leaf: "leaf-0", Gangs: 1}, fleet.LeafCrossings{Leaf: "leaf-1", Gangs: 1}),
				cross(time.Hour, fleet.LeafCrossings{Leaf: "leaf-0", Gangs: 1}, fleet.LeafCrossings{Leaf: "leaf-1", Gangs: 2},
					fleet.LeafCrossings{Leaf: "leaf-2", Gangs: 1}),
				cross(2*time.Hour, fleet.LeafCrossings{Leaf: "leaf-0", Gangs: 1}, fleet.LeafCrossings{Leaf: "leaf-1", Gangs: 2},
					fleet.LeafCrossings{Leaf: "leaf-2", Gangs: 1}),
			},
			want: []metrics.LeafUplinks{{Leaf: "leaf-0", Avg: 1, Max: 1}, {Leaf: "leaf-1", Avg: 1.5, Max: 2}, {Leaf: "leaf-2", Avg: 0.5, Max: 1}},
			now:  []fleet.LeafCrossings{{Leaf: "leaf-0", Gangs: 1}, {Leaf: "leaf-1", Gangs: 2}, {Leaf: "leaf-2", Gangs: 1}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := metrics.New(metrics.Config{})
			require.NoError(t, err)
			for _, s := range c.snaps {
				require.NoError(t, r.ObserveSnapshot(s))
			}
			rep := r.Report(t0, at(2*time.Hour))
			require.Equal(t, c.want, rep.Uplinks)
			require.Equal(t, c.now, r.Crossings())
			var b bytes.Buffer
			require.NoError(t, metrics.WriteMarkdown(&b, rep))
			if len(c.want) > 0 {
				require.Contains(t, b.String(), "Gangs crossing each leaf")
			} else {
				require.NotContains(t, b.String(), "Gangs crossing each leaf")
			}
		})
	}
}
