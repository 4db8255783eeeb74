package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func output(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, run(&b))
	return b.String()
}

func TestRunIsDeterministic(t *testing.T) {
	assert.Equal(t, output(t), output(t))
}

func TestRunReportsTheMix(t *testing.T) {
	out := output(t)
	for _, line := range []string{
		"training gang pretrain-512   512 GPUs on 8 leaves",
		"training gang finetune-128   128 GPUs on 2 leaves",
		"training gang rl-64           64 GPUs on 1 leaf",
		"spine-0",
		"  leaf-0-0  00000000", // whole nodes of the training gangs
		"  leaf-1-1  00000000",
		"  leaf-2-5  00000000",
		"largest free block (whole free nodes in one domain):",
	} {
		assert.Contains(t, out, line+"\n")
	}
	assert.Contains(t, out, "GPUs in 96 replicas of 1-4 GPUs\n")
}

// The figures printed below the map must agree with the map itself: a
// digit is a healthy node's free GPUs, '8' a whole free node, and any
// other non-zero digit stranded GPUs.
func TestRunFiguresMatchTheMap(t *testing.T) {
	out := output(t)
	free, whole, stranded, bestLeaf, inference := 0, 0, 0, 0, 0
	leaves := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "  leaf-") {
			continue
		}
		fields := strings.Fields(line)
		require.Len(t, fields, 2, line)
		require.Len(t, fields[1], 8, line)
		leaves++
		wholeHere := 0
		for _, c := range fields[1] {
			require.True(t, c >= '0' && c <= '8', "node rune %q in %q", c, line)
			d := int(c - '0')
			free += d
			inference += 8 - d
			switch {
			case d == 8:
				wholeHere++
			case d > 0:
				stranded += d
			}
		}
		whole += wholeHere
		bestLeaf = max(bestLeaf, wholeHere)
	}
	require.Equal(t, 32, leaves)
	inference -= 512 + 128 + 64

	assert.Contains(t, out, fmt.Sprintf("inference replicas         %4d GPUs", inference))
	assert.Contains(t, out, fmt.Sprintf("free %d/2048 GPUs, %d whole nodes free, stranded %d (", free, whole, stranded))
	assert.Contains(t, out, fmt.Sprintf("stranded GPUs: %d (%.1f%% of healthy GPUs)\n", stranded, 100*float64(stranded)/2048))
	assert.Contains(t, out, fmt.Sprintf("  fleet  %3d nodes (%4d GPUs) in the fleet\n", whole, 8*whole))
	assert.Contains(t, out, fmt.Sprintf("  leaf   %3d nodes (%4d GPUs) in leaf-", bestLeaf, 8*bestLeaf))
	assert.Positive(t, stranded, "scattered replicas should strand GPUs")
}
