package fleet_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/internal/script"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of scenario scripts")

// TestScenarios runs every scenario script of internal/script/scenarios
// (the situations the design names: an inference spike while training
// borrows, a failed drain, a node failure in a gang, the gang deadlock,
// starvation of a large gang, a cancelled beneficiary, fragmentation,
// allocation that is not use, a booking's life from proposal to end and a
// node failure in a booked block) and compares each command's output.
// go test -run Scenarios -rewrite regenerates the expected output.
func TestScenarios(t *testing.T) {
	names := script.Scenarios()
	require.NotEmpty(t, names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			text, ok := script.Scenario(name)
			require.True(t, ok)
			blocks, err := script.Parse(text)
			require.NoError(t, err)
			r, err := script.NewRunner()
			require.NoError(t, err)
			got, err := r.Run(blocks)
			require.NoError(t, err)
			if *rewrite {
				path := filepath.Join("internal", "script", "scenarios", name+".txt")
				require.NoError(t, os.WriteFile(path, []byte(script.Format(blocks, got)), 0o644))
				return
			}
			for i, b := range blocks {
				require.Equal(t, b.Want, got[i], "%s: command %q", name, b.Command)
			}
		})
	}
}
