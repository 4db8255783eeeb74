package slurm_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/slurm"
)

// Slurm's MAX_PREFIX_CNT bounds the values of one bracket group of the
// head (hostlist.c _push_range_list counts prefix_cnt per group, then
// recurses), not the product of every group: three groups of 300, 300 and
// 2 values are 180,000 hosts Slurm accepts.
func TestHostlistPrefixLimitIsPerGroup(t *testing.T) {
	hosts, err := slurm.ExpandHostlist("a[0-299]b[0-299]c[0-1]")
	require.NoError(t, err)
	require.Len(t, hosts, 300*300*2)
	require.Equal(t, "a0b0c0", hosts[0])
	require.Equal(t, "a299b299c1", hosts[len(hosts)-1])

	// One head group above the limit is refused, as in Slurm.
	_, err = slurm.ExpandHostlist("a[0-40000,0-40000]b[0-1]")
	require.ErrorIs(t, err, slurm.ErrHostlist)
	// The product is still bounded, by the host limit.
	_, err = slurm.ExpandHostlist("a[0-1023]b[0-1023]c[0-1]")
	require.ErrorIs(t, err, slurm.ErrTooManyHosts)
}
