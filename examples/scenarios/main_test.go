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
