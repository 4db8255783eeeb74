package quantity_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetsched/fleet/importer/internal/quantity"
)

func TestCeilRefusesQuantitiesBeyondInt64(t *testing.T) {
	const limit = 1 << 50
	tests := []struct {
		in      string
		want    int64
		rounded bool
		err     error
	}{
		{in: "8", want: 8},
		{in: "0", want: 0},
		{in: "500m", want: 1, rounded: true},
		{in: "1n", want: 1, rounded: true},
		{in: "1125899906842624", want: limit},
		{in: "1125899906842625", err: quantity.ErrOutOfRange},
		// apimachinery's Value() gives 0, 0, a negative number and 1 here.
		{in: "1e19", err: quantity.ErrOutOfRange},
		{in: "100E", err: quantity.ErrOutOfRange},
		{in: "9223372036854775808", err: quantity.ErrOutOfRange},
		{in: "18446744073709551617", err: quantity.ErrOutOfRange},
		{in: "8Ei", err: quantity.ErrOutOfRange},
		{in: "-1", err: quantity.ErrNegative},
		{in: "-1e19", err: quantity.ErrNegative},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			n, rounded, err := quantity.Ceil(resource.MustParse(tt.in), limit)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, n)
			assert.Equal(t, tt.rounded, rounded)
		})
	}
}
