package topology

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// A batch of changes leaves the aggregates and every ordered index as
// the same changes made one by one do, refused changes included, and
// batches run one after the other (or nested) on one fleet and its
// clones.
func TestPropertyBatchMatchesRecount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f, err := New(genSpec(t))
		require.NoError(t, err)
		fleets := []*Fleet{f}
		for range rapid.IntRange(1, 6).Draw(t, "batches") {
			i := rapid.IntRange(0, len(fleets)-1).Draw(t, "fleet")
			f := fleets[i]
			one := f.Clone()
			steps := rapid.IntRange(1, 30).Draw(t, "steps")
			type step struct{ op, n, gpus, health int }
			var plan []step
			for range steps {
				plan = append(plan, step{rapid.IntRange(0, 2).Draw(t, "op"), rapid.IntRange(-1, f.NumNodes()).Draw(t, "node"),
					rapid.IntRange(-1, 9).Draw(t, "gpus"), rapid.IntRange(0, 2).Draw(t, "health")})
			}
			apply := func(f *Fleet, s step) error {
				switch s.op {
				case 0:
					return f.Allocate(NodeID(s.n), s.gpus)
				case 1:
					return f.Release(NodeID(s.n), s.gpus)
				}
				return f.SetHealth(NodeID(s.n), Health(s.health))
			}
			var errs []error
			nested := rapid.Bool().Draw(t, "nested")
			f.Batch(func() {
				for j, s := range plan {
					if nested && j == len(plan)/2 {
						f.Batch(func() { errs = append(errs, apply(f, s)) })
						continue
					}
					errs = append(errs, apply(f, s))
				}
			})
			for j, s := range plan {
				require.Equal(t, apply(one, s) == nil, errs[j] == nil, "step %d: %+v", j, s)
			}
			checkAggregates(t, f)
			assertSameState(t, one, f)
			if rapid.Bool().Draw(t, "clone") {
				fleets = append(fleets, f.Clone())
			}
		}
	})
}
