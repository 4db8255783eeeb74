// Package draw gives tests one way to draw random inputs from either
// rapid, for properties that shrink, or a seeded generator, for recorded
// corpora that must draw the same inputs on every run and Go release;
// and the check of such a corpus against its recorded output.
package draw

import (
	"math/rand/v2"
	"os"
	"strings"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Drawer draws integers in [lo, hi]; label names the draw for rapid.
type Drawer interface {
	IntRange(lo, hi int, label string) int
}

// Rapid draws from a rapid test case.
func Rapid(t *rapid.T) Drawer { return rapidDrawer{t} }

type rapidDrawer struct{ t *rapid.T }

func (d rapidDrawer) IntRange(lo, hi int, label string) int {
	return rapid.IntRange(lo, hi).Draw(d.t, label)
}

// Seeded draws from a PCG generator of the given seeds, whose sequence
// is stable across Go releases.
func Seeded(seed1, seed2 uint64) Drawer { return seeded{rand.New(rand.NewPCG(seed1, seed2))} }

type seeded struct{ r *rand.Rand }

func (d seeded) IntRange(lo, hi int, _ string) int { return lo + d.r.IntN(hi-lo+1) }

// Pick draws one of values.
func Pick[T any](d Drawer, values []T, label string) T {
	return values[d.IntRange(0, len(values)-1, label)]
}

// Bool draws a coin.
func Bool(d Drawer, label string) bool { return d.IntRange(0, 1, label) == 1 }

// Permute draws an order of values, in a new slice.
func Permute[T any](d Drawer, values []T, label string) []T {
	out := append([]T(nil), values...)
	for i := len(out) - 1; i > 0; i-- {
		j := d.IntRange(0, i, label)
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// Recorded compares got, line by line, with the file at path, failing at
// the first line that differs; with rewrite it writes got there instead,
// so that the change shows as the file's diff.
func Recorded(t require.TestingT, path, got string, rewrite bool) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	if rewrite {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range min(len(gotLines), len(wantLines)) {
		if gotLines[i] != wantLines[i] {
			require.Failf(t, "a recorded line differs", "%s:%d (-rewrite records the new output)\nwant %s\n got %s",
				path, i+1, wantLines[i], gotLines[i])
		}
	}
	require.Equal(t, len(wantLines), len(gotLines), "%s: as many lines as recorded", path)
}
