package kueue_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/kueue"
	"github.com/fleetsched/fleet/quota"
)

// Kueue refuses borrowWithinCohort with reclaimWithinCohort Never (a CEL
// rule Parse mirrors), so Export must not write such a queue: what it
// writes, Parse must read back.
func TestExportRefusesBorrowWithinCohortWithoutReclaim(t *testing.T) {
	spec := quota.Spec{
		Flavors: []string{"h100"},
		Nodes: []quota.NodeSpec{
			{Name: "root", Kind: quota.Cohort},
			{Name: "q", Parent: "root", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "h100", Nominal: 8}},
				Preemption: quota.Rules{BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority}}},
		},
	}
	// The quota tree refuses it too; Export still guards a spec that was
	// never validated.
	_, err := quota.New(spec)
	require.ErrorIs(t, err, quota.ErrInvalidSpec)
	var buf bytes.Buffer
	err = kueue.Export(&buf, spec, kueue.ExportOptions{})
	if err == nil {
		_, perr := kueue.Parse(buf.Bytes(), kueue.Options{})
		require.NoError(t, perr, "Export wrote what Parse refuses:\n%s", buf.String())
	}
	require.ErrorIs(t, err, kueue.ErrCannotExport)
}
