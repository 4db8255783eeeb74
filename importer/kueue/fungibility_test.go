package kueue_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/kueue"
	"github.com/fleetsched/fleet/quota"
)

// flavorFungibility.whenCanBorrow and whenCanPreempt carry over in both
// spellings and are written back; preference is noted as not modelled.
func TestFlavorFungibility(t *testing.T) {
	cq := func(f string) string {
		return "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: a}\nspec:\n  flavorFungibility: " + f + "\n"
	}
	for _, tc := range []struct {
		spec string
		want quota.WhenCanBorrow
		pre  quota.WhenCanPreempt
		note string
	}{
		{spec: "{whenCanBorrow: Borrow}", want: quota.Borrow},
		{spec: "{whenCanBorrow: MayStopSearch}", want: quota.Borrow},
		{spec: "{whenCanBorrow: TryNextFlavor, whenCanPreempt: Preempt}", want: quota.TryNextFlavor, pre: quota.Preempt},
		{spec: "{whenCanPreempt: MayStopSearch}", pre: quota.Preempt},
		{spec: "{whenCanPreempt: TryNextFlavor}"},
		{spec: "{whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor, preference: PreemptionOverBorrowing}",
			want: quota.TryNextFlavor, note: "spec.flavorFungibility.preference not modelled"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			res, err := kueue.Parse([]byte(cq(tc.spec)), kueue.Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Spec.Nodes[0].FlavorFungibility.WhenCanBorrow)
			assert.Equal(t, tc.pre, res.Spec.Nodes[0].FlavorFungibility.WhenCanPreempt)
			var notes []string
			for _, n := range res.Notes {
				notes = append(notes, n.String())
			}
			if tc.note != "" {
				assert.Contains(t, strings.Join(notes, "\n"), tc.note)
			}
			var out bytes.Buffer
			require.NoError(t, kueue.Export(&out, res.Spec, kueue.ExportOptions{}))
			back, err := kueue.Parse(out.Bytes(), kueue.Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, back.Spec.Nodes[0].FlavorFungibility.WhenCanBorrow, "written back")
			assert.Equal(t, tc.pre, back.Spec.Nodes[0].FlavorFungibility.WhenCanPreempt, "written back")
		})
	}
	_, err := kueue.Parse([]byte(cq("{whenCanBorrow: Sometimes}")), kueue.Options{})
	assert.ErrorIs(t, err, kueue.ErrInvalid)
	_, err = kueue.Parse([]byte(cq("{whenCanPreempt: Sometimes}")), kueue.Options{})
	assert.ErrorIs(t, err, kueue.ErrInvalid)
}
