package quota

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBorrowWithinCohortNeedsReclaim(t *testing.T) {
	spec := Spec{Flavors: []string{"H100"}, Nodes: []NodeSpec{
		{Name: "c", Kind: Cohort},
		{Name: "q", Parent: "c", Kind: Queue, Quotas: []FlavorQuota{{Flavor: "H100", Nominal: 8}},
			Preemption: Rules{BorrowWithinCohort: BorrowWithinCohort{Policy: BorrowLowerPriority}}},
	}}
	_, err := New(spec)
	require.ErrorIs(t, err, ErrInvalidSpec)
	var se *SpecError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "preemption.borrowWithinCohort.policy", se.Field)
	spec.Nodes[1].Preemption.ReclaimWithinCohort = ReclaimLowerPriority
	_, err = New(spec)
	require.NoError(t, err)
}
