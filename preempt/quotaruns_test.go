package preempt_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/preempt"
)

// Victims for quota are taken in runs (8, then 16, ...), with one tree
// change per queue per run; the set is the one-by-one walk's.

// TestReclaimStopsMidRunWhenTheBorrowerIsBackWithinQuota: b borrows 10
// with 12 workloads; a needs 10 back. The first run of 8 leaves b
// borrowing; the next would take b's last 4, past the point where b is
// back within its quota, so it is walked one by one: b's 10 lowest go,
// its 2 highest stay.
func TestReclaimStopsMidRunWhenTheBorrowerIsBackWithinQuota(t *testing.T) {
	u := newUnitEnv(t, cohort("c", "", 0), queue("a", "c", 20, reclaimAny), queue("b", "c", 2, lower))
	var want []string
	for i := range 12 {
		id := fmt.Sprintf("b%02d", i)
		u.runN(id, "b", int32(i), 1)
		if i < 10 {
			want = append(want, id)
		}
	}
	p, err := victims(t, u.env, u.req("new", "a", 50, 20, 1, ""), nil)
	require.NoError(t, err)
	assert.Equal(t, want, ids(p))
	for _, v := range p.Victims {
		assert.Equal(t, preempt.Reclaim, v.Reason)
	}
	assert.False(t, p.Borrowing)
}
