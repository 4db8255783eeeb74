package quota_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
)

func TestFungibility(t *testing.T) {
	spec := func(root, a quota.Fungibility) quota.Spec {
		return quota.Spec{Flavors: []string{"H100", "A100"}, Nodes: []quota.NodeSpec{
			{Name: "root", Kind: quota.Cohort, FlavorFungibility: root},
			{Name: "a", Parent: "root", Kind: quota.Queue, FlavorFungibility: a,
				Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 1}}}}}
	}
	try := quota.Fungibility{WhenCanBorrow: quota.TryNextFlavor}
	for _, tc := range []struct {
		name    string
		root, a quota.Fungibility
		err     error
	}{
		{name: "default"},
		{name: "try next flavor", a: try},
		{name: "on a cohort", root: try, err: quota.ErrRulesOnCohort},
		{name: "out of range", a: quota.Fungibility{WhenCanBorrow: 7}, err: quota.ErrInvalidSpec},
		{name: "first past the last value", a: quota.Fungibility{WhenCanBorrow: quota.TryNextFlavor + 1}, err: quota.ErrInvalidSpec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := quota.New(spec(tc.root, tc.a))
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			a, _ := tr.Node("a")
			assert.Equal(t, tc.a, tr.Fungibility(a))
			assert.Equal(t, tc.a, tr.Spec().Nodes[1].FlavorFungibility, "Spec lists it")
			assert.Equal(t, tc.a, tr.Clone().Fungibility(a))
			n := tr.Spec().Nodes[1]
			n.FlavorFungibility = try
			require.NoError(t, tr.SetNode(n))
			assert.Equal(t, try, tr.Fungibility(a), "SetNode edits it")
		})
	}
	b, err := json.Marshal(try)
	require.NoError(t, err)
	assert.JSONEq(t, `{"whenCanBorrow":"TryNextFlavor"}`, string(b))
	var back quota.Fungibility
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, try, back)
	assert.Error(t, json.Unmarshal([]byte(`{"whenCanBorrow":"Sometimes"}`), &back))
}
