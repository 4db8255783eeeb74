package packing_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/internal/packing"
)

// TestPackingTable replays the synthetic mix under every policy and
// prints the allocated share of GPU capacity at 100-130% requested (run
// with -v). The fleet's built-in policy must beat BestFit at 130%.
func TestPackingTable(t *testing.T) {
	if testing.Short() {
		t.Skip("replays four policies")
	}
	mix := packing.Mix(1, 40000)
	var rows []packing.Row
	for _, p := range []packing.Policy{packing.NewFleetPolicy(), packing.NewBestFit(), packing.NewFirstFit(), packing.NewRandom(1)} {
		row, err := packing.Run(p, mix)
		require.NoError(t, err)
		rows = append(rows, row)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s", "requested")
	for _, l := range packing.Levels() {
		fmt.Fprintf(&b, " %6.0f%%", 100*l)
	}
	b.WriteString("\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-9s", r.Policy)
		for _, a := range r.Allocated {
			fmt.Fprintf(&b, " %6.2f%%", a)
		}
		b.WriteString("\n")
	}
	t.Log("allocated share of GPU capacity\n" + b.String())
	last := len(packing.Levels()) - 1
	require.Greater(t, rows[0].Allocated[last], rows[1].Allocated[last], "fleet must beat BestFit at 130%% requested")
}
