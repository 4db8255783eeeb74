package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// The program prints one table per mix with the four policies' rows.
func TestRunPrintsEveryMix(t *testing.T) {
	if testing.Short() {
		t.Skip("replays every mix")
	}
	var b bytes.Buffer
	require.NoError(t, run(&b, 1))
	out := b.String()
	for _, s := range []string{"mix default, seed 1", "mix spec33, seed 1", "\nfleet ", "\nbestfit ", "\nfirstfit ", "\nrandom "} {
		require.Contains(t, out, s)
	}
}
