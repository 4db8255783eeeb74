package quota

import (
	"encoding/json"
	"strconv"
)

// MaxAmount bounds every GPU quantity the package accepts: a single quota or
// limit, the sum of all nominal quotas of one flavor, and the GPUs in use of
// one flavor across the whole tree. It is far above any real fleet and keeps
// every intermediate sum of the arithmetic inside int64, so no operation
// needs to saturate.
const MaxAmount int64 = 1 << 50

// noLimit is the internal encoding of an unset Limit in the flat slices.
// Real limits are never negative, so -1 cannot collide with one.
const noLimit int64 = -1

// Limit is an optional GPU amount: a borrowing or lending limit. The zero
// Limit means "no limit", which is what Kueue means by an absent
// borrowingLimit (borrow as much as the tree can lend) or an absent
// lendingLimit (lend the whole quota). In JSON an unset Limit is null or
// absent, and a set one is a number.
type Limit struct {
	n   int64
	set bool
}

// LimitOf returns a Limit of n GPUs.
func LimitOf(n int64) Limit { return Limit{n: n, set: true} }

// Get returns the limit and true, or 0 and false when there is no limit.
func (l Limit) Get() (int64, bool) { return l.n, l.set }

// IsZero reports whether l is "no limit"; it lets `omitzero` drop it from JSON.
func (l Limit) IsZero() bool { return !l.set }

// String renders the limit, or "none".
func (l Limit) String() string {
	if !l.set {
		return "none"
	}
	return strconv.FormatInt(l.n, 10)
}

// MarshalJSON writes null for "no limit" and the number otherwise.
func (l Limit) MarshalJSON() ([]byte, error) {
	if !l.set {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, l.n, 10), nil
}

// UnmarshalJSON accepts null or an integer.
func (l *Limit) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*l = Limit{}
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*l = LimitOf(n)
	return nil
}

// encode turns a Limit into the flat-slice form.
func (l Limit) encode() int64 {
	if !l.set {
		return noLimit
	}
	return l.n
}

// decodeLimit is the inverse of encode.
func decodeLimit(v int64) Limit {
	if v == noLimit {
		return Limit{}
	}
	return LimitOf(v)
}
