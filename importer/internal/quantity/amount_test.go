package quantity_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/internal/quantity"
)

// Resources convert to the fleet's units: cpu in millicores, memory in
// bytes, extended resources as counts, rounded up; negative and
// overflowing quantities are refused.
func TestAmount(t *testing.T) {
	tests := []struct {
		name, in string
		want     int64
		err      error
	}{
		{"cpu", "96", 96000, nil},
		{"cpu", "95500m", 95500, nil},
		{"cpu", "0.5", 500, nil},
		{"cpu", "1.0005", 1001, nil},
		{"memory", "512Gi", 512 << 30, nil},
		{"memory", "1k", 1000, nil},
		{"memory", "1.5", 2, nil},
		{"example.com/nic", "4", 4, nil},
		{"cpu", "-1", 0, quantity.ErrNegative},
		{"memory", "-1Gi", 0, quantity.ErrNegative},
		{"memory", "8Ei", 0, quantity.ErrOutOfRange},
		{"cpu", "1e19", 0, quantity.ErrOutOfRange},
		{"cpu", "4503599627371", 0, quantity.ErrOutOfRange},
		{"cpu", "4503599627370", 4503599627370000, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.in, func(t *testing.T) {
			got, err := quantity.ParseAmount(tt.name, tt.in)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	_, err := quantity.ParseAmount("cpu", "lots")
	require.Error(t, err)
}
