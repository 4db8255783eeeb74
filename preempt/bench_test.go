package preempt_test

import (
	"fmt"
	"testing"

	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/preempt"
)

// victimCases are the decisions BenchmarkVictims times, on the reference
// shapes of the design:
//   - reclaim=64gpu, reclaim=8x8gpu: queue 7 takes back its quota from
//     queue 0's borrowed work, as 64 x 1 GPU and as 8 whole nodes;
//   - spike=100gpu: inference returns to its guarantee (25 x 4 GPUs) from
//     borrowing batch work;
//   - clear=512gpu: a 64 x 8 GPU gang clears room on one spine of a full
//     fleet;
//   - leaf=8x8gpu: an 8 x 8 GPU gang clears one leaf of a full fleet.
var victimCases = []struct {
	name  string
	build func(gpus int, fill shapes.Fill) (*shapes.Victim, preempt.Request)
}{
	{"reclaim=64gpu", func(gpus int, fill shapes.Fill) (*shapes.Victim, preempt.Request) {
		v := shapes.Reclaim(gpus, fill, 1)
		return v, v.Ask("reclaim", 64, 1, "")
	}},
	{"reclaim=8x8gpu", func(gpus int, fill shapes.Fill) (*shapes.Victim, preempt.Request) {
		v := shapes.Reclaim(gpus, fill, 1)
		return v, v.Ask("reclaim", 8, 8, "")
	}},
	{"spike=100gpu", func(gpus int, fill shapes.Fill) (*shapes.Victim, preempt.Request) {
		v := shapes.Spike(gpus, fill, 1)
		return v, v.Request
	}},
	{"clear=512gpu", func(gpus int, fill shapes.Fill) (*shapes.Victim, preempt.Request) {
		v := shapes.Clear(gpus, fill, 1)
		return v, v.Request
	}},
	{"leaf=8x8gpu", func(gpus int, fill shapes.Fill) (*shapes.Victim, preempt.Request) {
		v := shapes.Clear(gpus, fill, 1)
		return v, v.Ask("leaf", 8, 8, "leaf")
	}},
}

// BenchmarkVictims times one victim search per operation on every shape,
// fill and fleet size. The state (the fleet, the tree, the Index and the
// scratch mirror of the fleet) is built before the timer: keeping the
// Index and the mirror up to date is the host's cost when work starts
// and stops, not the decision's. Everything a search pays per call is
// timed: copying the tree, setting up the rules, the bounds, the
// placement on the scratch fleet and giving it back. Every combination is
// a decision that succeeds (checked before timing); none is skipped.
//
// Each operation is timed on its own for the p99 (the searches take
// microseconds, far above the clock's cost). cpu-ns/op is the process's
// CPU time per operation, which a shared machine's load does not
// inflate as it does the wall-clock figures.
func BenchmarkVictims(b *testing.B) {
	for _, gpus := range shapes.Ladder() {
		for _, c := range victimCases {
			for _, fill := range shapes.Fills() {
				b.Run(fmt.Sprintf("gpus=%d/%s/fill=%s", gpus, c.name, fill), func(b *testing.B) {
					v, req := c.build(gpus, fill)
					view := v.View()
					s := preempt.NewSearcher(preempt.Options{})
					p, err := s.Victims(view, req, nil)
					if err != nil {
						b.Fatal(err)
					}
					timeVictims(b, s, view, req, len(p.Victims))
				})
			}
		}
	}
}
