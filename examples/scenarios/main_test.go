package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListsAndPlaysEveryScenario(t *testing.T) {
	var list strings.Builder
	require.NoError(t, run(nil, &list))
	assert.Contains(t, list.String(), "inference_spike")

	var all strings.Builder
	require.NoError(t, run([]string{"all"}, &all))
	out := all.String()
	for _, want := range []string{"=== inference_spike", "drain batch-3 for spike-8", "=== drain_fails", "kill train",
		"=== gang_deadlock", "=== fragmentation", "stranded 300", "=== allocation_not_use", "allocation rate 85%",
		"=== booking_life", "drain batch-1 by 05:59:00 (booking", "=== booking_node_failure", "relocated pretrain: spine spine-2"} {
		assert.Contains(t, out, want)
	}
	assert.Error(t, run([]string{"nope"}, &all))
}

// Every line of every scenario fits the console, and -h lists them.
func TestLinesFitAndHelpLists(t *testing.T) {
	var all strings.Builder
	require.NoError(t, run([]string{"all"}, &all))
	for _, line := range strings.Split(all.String(), "\n") {
		assert.LessOrEqual(t, len(line), width, line)
	}
	var help strings.Builder
	require.NoError(t, run([]string{"-h"}, &help))
	assert.Contains(t, help.String(), "booking_life")
	err := run([]string{"nope"}, &help)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no scenario "nope": run without arguments for the list`)
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"short\n", "short\n"},
		{"  aaaa bbbb cccc\n", "  aaaa\n      bbbb\n      cccc\n"},
		{"x aaaaaaaaaaaaaaaaaaaa b\n", "x\n    aaaaaaaaaaaaaaaaaaaa\n    b\n"},
	} {
		assert.Equal(t, tc.want, wrap(tc.in, 10), "%q", tc.in)
	}
}
