package quantity

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MaxAmount bounds a resource amount in fleet units (2^52: 4 PiB of
// memory, 4.5 billion cores), well inside int64 and exactly representable
// in a float64.
const MaxAmount = 1 << 52

// Amount converts a Kubernetes quantity of resource name into the fleet's
// unit for it, rounding up as Kueue does: "cpu" in millicores ("95500m",
// "96"), everything else ("memory" in bytes, extended resources as
// counts) in whole units. It refuses a negative quantity (ErrNegative)
// and one above MaxAmount in those units (ErrOutOfRange).
func Amount(name string, q resource.Quantity) (int64, error) {
	if name == "cpu" {
		if q.Sign() < 0 {
			return 0, ErrNegative
		}
		if huge(q) || q.Cmp(*resource.NewMilliQuantity(MaxAmount, resource.DecimalSI)) > 0 {
			return 0, fmt.Errorf("%w: above %d millicores", ErrOutOfRange, int64(MaxAmount))
		}
		return q.MilliValue(), nil
	}
	n, _, err := Ceil(q, MaxAmount)
	return n, err
}

// ParseAmount parses s as a Kubernetes quantity (with Parse) and converts
// it with Amount.
func ParseAmount(name, s string) (int64, error) {
	q, err := Parse(s)
	if err != nil {
		return 0, err
	}
	return Amount(name, q)
}
