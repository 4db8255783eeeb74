package quota_test

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
)

// FuzzSpec feeds arbitrary JSON to the spec loader. It must never panic,
// every rejection must be a *SpecError wrapping ErrInvalidSpec, and an
// accepted spec must survive Spec -> JSON -> ParseSpec -> New unchanged.
func FuzzSpec(f *testing.F) {
	ref, err := os.ReadFile("testdata/reference_fleet.json")
	require.NoError(f, err)
	f.Add(ref)
	for _, s := range []string{
		`{}`,
		`{"flavors":["H100"],"nodes":[{"name":"a","kind":"queue"}]}`,
		`{"flavors":["H100"],"nodes":[{"name":"a","kind":"cohort","parent":"b"},{"name":"b","kind":"cohort","parent":"a"}]}`,
		`{"flavors":["H100","H100"]}`,
		`{"flavors":["H100"],"nodes":[{"name":"r","kind":"cohort"},{"name":"q","parent":"r","kind":"queue","quotas":[{"flavor":"H100","nominal":4,"lendingLimit":5}]}]}`,
		`{"flavors":["H100"],"nodes":[{"name":"r","kind":"cohort"},{"name":"q","parent":"r","kind":"queue","weight":-1}]}`,
		`{"flavors":["H100"],"nodes":[{"name":"r","kind":"cohort","quotas":[{"flavor":"H100","nominal":1125899906842624}]}]}`,
		`{"nodes":[{"name":"q","kind":"queue","preemption":{"borrowWithinCohort":{"policy":"LowerPriority","maxPriorityThreshold":-3}}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := quota.ParseSpec(data)
		if err == nil {
			var tree *quota.Tree
			tree, err = quota.New(spec)
			if err == nil {
				out, merr := json.Marshal(tree.Spec())
				require.NoError(t, merr)
				again, perr := quota.ParseSpec(out)
				require.NoError(t, perr, "%s", out)
				tree2, nerr := quota.New(again)
				require.NoError(t, nerr, "%s", out)
				require.Equal(t, tree.Spec(), tree2.Spec())
				return
			}
		}
		var se *quota.SpecError
		require.True(t, errors.As(err, &se), "untyped error %T: %v", err, err)
		require.ErrorIs(t, err, quota.ErrInvalidSpec)
	})
}
