// Package quantity turns Kubernetes resource quantities into whole counts
// the way Kueue does (rounding up), without apimachinery's silent
// overflow: Quantity.Value returns 0, a negative number or a wrapped
// value for anything beyond int64 ("1e19", "100E", "9223372036854775808"),
// so the bound is checked on the quantity itself, before Value is read.
package quantity

import (
	"errors"
	"fmt"
	"strings"

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
	if huge(q) {
		return 0, false, fmt.Errorf("%w: above %d", ErrOutOfRange, limit)
	}
	if q.Cmp(*resource.NewQuantity(limit, resource.DecimalSI)) > 0 {
		return 0, false, fmt.Errorf("%w: above %d", ErrOutOfRange, limit)
	}
	n = q.Value()
	return n, q.MilliValue() != n*1000, nil
}

// maxExponent bounds the decimal exponent a quantity may be written with
// ("1e9999999"): apimachinery's parser rounds a tiny value to nanos and
// Quantity.Cmp aligns exponents digit by digit, each in time and memory
// that grow with the exponent (seconds and tens of MB for seven digits).
// No quantity an importer reads needs more than a few dozen.
const maxExponent = 100

// Parse parses s as a Kubernetes quantity, as resource.ParseQuantity
// does, but first refuses, with ErrOutOfRange and in time linear in
// len(s), a decimal exponent beyond ±maxExponent.
func Parse(s string) (resource.Quantity, error) {
	if e, ok := exponent(s); ok && (e > maxExponent || e < -maxExponent) {
		return resource.Quantity{}, fmt.Errorf("%w: exponent beyond ±%d", ErrOutOfRange, maxExponent)
	}
	return resource.ParseQuantity(s)
}

// exponent reads the decimal exponent of s ("1.5e-3": -3), and false
// when s has none. A value past ±maxExponent saturates there.
func exponent(s string) (int, bool) {
	i := strings.LastIndexAny(s, "eE")
	if i < 1 || i == len(s)-1 {
		return 0, false // no exponent, or the suffix E (exa)
	}
	digits, sign := s[i+1:], 1
	switch digits[0] {
	case '+':
		digits = digits[1:]
	case '-':
		digits, sign = digits[1:], -1
	}
	if digits == "" {
		return 0, false
	}
	e := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		e = min(e*10+int(c-'0'), maxExponent+1)
	}
	return sign * e, true
}

// huge reports, in constant time, whether q is surely above 10^20, beyond
// every bound an importer checks (each below 2^63/1000): it has b > 0
// bits of unscaled value and scale k, so it is at least 2^(b-1) * 10^-k.
// It spares Quantity.Cmp a quantity parsed with a large exponent.
func huge(q resource.Quantity) bool {
	d := q.AsDec()
	bits := int64(d.UnscaledBig().BitLen())
	return bits > 0 && (bits-1)*3/10-int64(d.Scale()) > 20
}
