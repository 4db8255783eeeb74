package placement_test

import (
	"fmt"
	"testing"

	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/topology"
)

// BenchmarkPlaceWarm times a 1-GPU replica naming its model on the
// "fragmented" reference shape where every eighth node holds the model's
// weights (up to MaxWarm of them are read), beside the same replica
// without a model.
func BenchmarkPlaceWarm(b *testing.B) {
	for _, gpus := range shapes.Ladder() {
		f := shapes.NewFleet(gpus)
		shapes.Fragmented(f, 1)
		var nodes []topology.NodeID
		for n := range topology.NodeID(f.NumNodes()) {
			if n%8 == 0 {
				nodes = append(nodes, n)
			}
		}
		warm := warmList{"llama": nodes}
		for _, model := range []string{"", "llama"} {
			name := "replica=1gpu"
			if model != "" {
				name += "-warm"
			}
			b.Run(fmt.Sprintf("gpus=%d/%s", gpus, name), func(b *testing.B) {
				w := work("r", 1, 1, "", "")
				w.Model = model
				timePlace(b, placement.NewPlacer(placement.Options{Warm: warm}), f, w)
			})
		}
	}
}
