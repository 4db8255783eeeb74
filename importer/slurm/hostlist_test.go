package slurm_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/slurm"
)

func seq(prefix string, lo, hi int, width int) []string {
	var out []string
	for i := lo; i <= hi; i++ {
		out = append(out, fmt.Sprintf("%s%0*d", prefix, width, i))
	}
	return out
}

func cat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// The vectors of Slurm's hostlist.c behaviour, plus the limits.
func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"tux[0-3,12,18-20]", cat(seq("tux", 0, 3, 1), []string{"tux12"}, seq("tux", 18, 20, 1))},
		{"node[001-064,070]", cat(seq("node", 1, 64, 3), []string{"node070"})},
		{"n[08-10]", []string{"n08", "n09", "n10"}},
		{"n[8-10]", []string{"n8", "n9", "n10"}},
		{"n[1-010]", seq("n", 1, 10, 1)},
		{"n[9-11,007-008]", []string{"n9", "n10", "n11", "n007", "n008"}},
		{"rack[1-2]-gpu[01-02]", []string{"rack1-gpu01", "rack1-gpu02", "rack2-gpu01", "rack2-gpu02"}},
		{"a[1-2]b[3-4]c[5-6]", []string{"a1b3c5", "a1b3c6", "a2b3c5", "a2b3c6", "a1b4c5", "a1b4c6", "a2b4c5", "a2b4c6"}},
		{"gpu[1-2]-ib", []string{"gpu1-ib", "gpu2-ib"}},
		{"a,b c", []string{"a", "b", "c"}},
		{"a,,b  \t\nc,", []string{"a", "b", "c"}},
		{"[1-3]", []string{"1", "2", "3"}},
		{"tux0-5", []string{"tux0-5"}},
		{"tux0-5,tux12", []string{"tux0-5", "tux12"}},
		{"x[5]", []string{"x5"}},
		{"x[5,5]", []string{"x5", "x5"}}, // duplicates are kept
		{"gpu[1-2],cpu[1-2]", []string{"gpu1", "gpu2", "cpu1", "cpu2"}},
		{"n[0-1]x[0]", []string{"n0x0", "n1x0"}},
		{"", nil},
		{"  ,, ", nil},
		{"big[0-65535]", seq("big", 0, 65535, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := slurm.ExpandHostlist(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestExpandHostlistErrors(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"n[3-1]", slurm.ErrHostlist},
		{"n[1-3", slurm.ErrHostlist},
		{"n[-1]", slurm.ErrHostlist},
		{"n[]", slurm.ErrHostlist},
		{"n[1,]", slurm.ErrHostlist},
		{"n[a-b]", slurm.ErrHostlist},
		{"n[+1]", slurm.ErrHostlist},
		{"n[1-2-3]", slurm.ErrHostlist},
		{"n[1]x]", slurm.ErrHostlist},
		{"n]x[1]", slurm.ErrHostlist},
		{"ok,n[1-2", slurm.ErrHostlist},
		{"n[0-65536]", slurm.ErrHostlist},                   // 65,537 hosts in one range
		{"a[0-999999999999999999999]", slurm.ErrHostlist},   // bound beyond 18 digits
		{"a[0-40000,0-40000]b[0-1]", slurm.ErrHostlist},     // 80,002 values in one head group
		{"a[0-1023]b[0-1023]c[0-1]", slurm.ErrTooManyHosts}, // 2M hosts
		{"a[0-1023]b[0-2047]", slurm.ErrTooManyHosts},       // 2M hosts
		{strings.Repeat("a[0-65535],", 17), slurm.ErrTooManyHosts},
	}
	for _, tt := range tests {
		name := tt.in
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			_, err := slurm.ExpandHostlist(tt.in)
			require.ErrorIs(t, err, tt.want)
			var he *slurm.HostlistError
			require.True(t, errors.As(err, &he))
			assert.Equal(t, tt.in, he.Expr)
		})
	}
}

func TestCompressHostlist(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{seq("node-0-0-", 0, 7, 1), "node-0-0-[0-7]"},
		{[]string{"n08", "n09", "n10"}, "n[08-10]"},
		{[]string{"n8", "n9", "n10"}, "n[8-10]"},
		{[]string{"n9", "n10", "n007"}, "n[9-10,007]"},
		{[]string{"a", "b1", "tux0-5"}, "a,b1,tux0-5"},
		{[]string{"gpu1-ib", "gpu2-ib"}, "gpu1-ib,gpu2-ib"},
		{[]string{"x5", "x5"}, "x[5,5]"},
		{[]string{"n3", "n1", "m2"}, "n[3,1],m2"},
		{nil, ""},
	}
	for _, tt := range tests {
		got, err := slurm.CompressHostlist(tt.in)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got)
		back, err := slurm.ExpandHostlist(got)
		require.NoError(t, err)
		assert.Equal(t, tt.in, back)
	}
	for _, bad := range []string{"", "a b", "a,b", "a[1]"} {
		_, err := slurm.CompressHostlist([]string{bad})
		assert.ErrorIs(t, err, slurm.ErrHostlist, bad)
	}
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"tux[0-3,12,18-20]", "n[1-010]", "a[1-2]b[3-4]c[5-6]", "gpu[1-2]-ib", "n[3-1]", "[1-3]", "a,b c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		hosts, err := slurm.ExpandHostlist(s)
		if err != nil {
			var he *slurm.HostlistError
			if !errors.As(err, &he) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(hosts) > slurm.MaxHosts {
			t.Fatalf("%d hosts", len(hosts))
		}
		if len(hosts) > 10000 {
			return
		}
		// Whatever expands compresses back to the same list.
		expr, err := slurm.CompressHostlist(hosts)
		if err != nil {
			return // a literal name holding a bracket
		}
		back, err := slurm.ExpandHostlist(expr)
		if err != nil || strings.Join(back, "\x00") != strings.Join(hosts, "\x00") {
			t.Fatalf("%q -> %q -> %q (%v)", s, expr, back, err)
		}
	})
}
