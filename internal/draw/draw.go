// Package draw gives tests one way to draw random inputs from either
// rapid, for properties that shrink, or a seeded generator, for recorded
// corpora that must draw the same inputs on every run and Go release.
package draw

import (
	"math/rand/v2"

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
