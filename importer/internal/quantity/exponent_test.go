package quantity_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetsched/fleet/importer/internal/quantity"
)

// allocated is the bytes fn allocates on the heap.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A quantity written with a huge exponent is refused as out of range
// before any exact decimal arithmetic: apimachinery's parser and
// Quantity.Cmp each spend time and memory growing with the exponent
// (tens of MB and over a second for "1e9999999"). The refusal allocates
// a few hundred bytes.
func TestAHugeExponentIsRefusedCheaply(t *testing.T) {
	for _, in := range []string{"1e9999999", "1e99999999", "1E9999999", "1e+9999999", "1e-9999999", "3.5e101", "0e9999999"} {
		t.Run(in, func(t *testing.T) {
			var err error
			bytes := allocated(func() { _, err = quantity.Parse(in) })
			require.ErrorIs(t, err, quantity.ErrOutOfRange)
			assert.Less(t, bytes, uint64(4096))
			bytes = allocated(func() { _, err = quantity.ParseAmount("cpu", in) })
			require.ErrorIs(t, err, quantity.ErrOutOfRange)
			assert.Less(t, bytes, uint64(4096))
		})
	}
	// A quantity parsed elsewhere with a huge exponent is refused by the
	// bound check without Quantity.Cmp.
	q := resource.MustParse("1e9999999")
	var err error
	bytes := allocated(func() { _, _, err = quantity.Ceil(q, 1<<50) })
	require.ErrorIs(t, err, quantity.ErrOutOfRange)
	assert.Less(t, bytes, uint64(4096))
	bytes = allocated(func() { _, err = quantity.Amount("cpu", q) })
	require.ErrorIs(t, err, quantity.ErrOutOfRange)
	assert.Less(t, bytes, uint64(4096))
}

// Exponents within the bound, and the suffix E (exa), read as before.
func TestParseKeepsOrdinaryExponents(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
	}{
		{"1e3", 1000}, {"2E2", 200}, {"5e-1", 1}, {"1e+2", 100}, {"1E", 1e18}, {"8", 8}, {"1e18", 1e18},
	} {
		q, err := quantity.Parse(tt.in)
		require.NoError(t, err, tt.in)
		n, _, err := quantity.Ceil(q, 1<<62)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, n, tt.in)
	}
	_, _, err := quantity.Ceil(resource.MustParse("1e100"), 1<<50)
	assert.ErrorIs(t, err, quantity.ErrOutOfRange)
}

// BenchmarkRefuseHugeExponent measures the refusal of "1e9999999" by
// Parse and, for a quantity already parsed, by the bound check.
func BenchmarkRefuseHugeExponent(b *testing.B) {
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := quantity.Parse("1e9999999"); err == nil {
				b.Fatal("accepted")
			}
		}
	})
	b.Run("ceil", func(b *testing.B) {
		q := resource.MustParse("1e9999999")
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := quantity.Ceil(q, 1<<50); err == nil {
				b.Fatal("accepted")
			}
		}
	})
}
