// Package quantity turns Kubernetes resource quantities into whole counts
// the way Kueue does (rounding up), without apimachinery's silent
// overflow: Quantity.Value returns 0, a negative number or a wrapped
// value for anything beyond int64 ("1e19", "100E", "9223372036854775808"),
// so the bound is checked on the quantity itself, before Value is read.
package quantity

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Errors of Ceil. Each importer wraps them in its own typed error that
// names the file, object and field and quotes the quantity as written
// (Quantity.String of an overflowing value is itself wrong: "8Ei" prints
// as 9223372036854775807).
var (
	ErrNegative   = errors.New("negative")
	ErrOutOfRange = errors.New("out of range")
)

// Ceil returns q rounded up to a whole number, and whether it had to round.
// It refuses a negative q (ErrNegative) and one above limit
// (ErrOutOfRange), comparing the exact decimal values, so a quantity too
// large for int64 is refused instead of read as apimachinery's overflow
// result. limit must be below 2^53 so that the milli-value check stays
// inside int64.
func Ceil(q resource.Quantity, limit int64) (n int64, rounded bool, err error) {
	if q.Sign() < 0 {
		return 0, false, ErrNegative
	}
	if q.Cmp(*resource.NewQuantity(limit, resource.DecimalSI)) > 0 {
		return 0, false, fmt.Errorf("%w: above %d", ErrOutOfRange, limit)
	}
	n = q.Value()
	return n, q.MilliValue() != n*1000, nil
}
