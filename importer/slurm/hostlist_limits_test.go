package slurm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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

// MaxHosts bounds one expression; a file of many expressions each under it
// would still name millions of nodes from a few hundred bytes (and take
// gigabytes to import). MaxFileHosts bounds the file: the record whose
// expression crosses it is refused, in topology.conf and topology.yaml.
func TestHostlistLimitIsPerFile(t *testing.T) {
	var conf, yml strings.Builder
	yml.WriteString("- topology: big\n  tree:\n    switches:\n")
	for i := range 24 {
		fmt.Fprintf(&conf, "SwitchName=s%d Nodes=n%d-[0-65535]\n", i, i)
		fmt.Fprintf(&yml, "      - switch: s%d\n        nodes: n%d-[0-65535]\n", i, i)
	}
	require.Less(t, conf.Len(), 1024)
	tests := []struct {
		name  string
		parse func([]byte, slurm.Options) (*slurm.Result, error)
		data  string
		line  int
	}{
		{"conf", slurm.ParseConf, conf.String(), slurm.MaxFileHosts/65536 + 1},
		{"yaml", slurm.ParseYAML, yml.String(), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.parse([]byte(tt.data), slurm.Options{})
			require.ErrorIs(t, err, slurm.ErrTooManyHosts)
			var pe *slurm.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.line, pe.Line)
			assert.Equal(t, fmt.Sprintf("s%d", slurm.MaxFileHosts/65536), pe.Name)
			var he *slurm.HostlistError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, fmt.Sprintf("n%d-[0-65535]", slurm.MaxFileHosts/65536), he.Expr)
			assert.Contains(t, err.Error(), "the file's hostlists name more than 262144 hosts")
		})
	}

	// Every expression of the file counts, switch names included, and a
	// file within the bound is read as before.
	_, err := slurm.ParseConf([]byte("SwitchName=top Switches=s[0-3]\n"+
		"SwitchName=s0 Nodes=a[0-65535]\nSwitchName=s1 Nodes=b[0-65535]\n"+
		"SwitchName=s2 Nodes=c[0-65535]\nSwitchName=s3 Nodes=d[0-65535]\n"), slurm.Options{})
	require.ErrorIs(t, err, slurm.ErrTooManyHosts)
	res, err := slurm.ParseConf([]byte("SwitchName=top Switches=s[0-1]\nSwitchName=s0 Nodes=a[0-1023]\nSwitchName=s1 Nodes=b[0-1023]\n"), slurm.Options{})
	require.NoError(t, err)
	assert.Len(t, res.Spec.Nodes, 2048)
}
