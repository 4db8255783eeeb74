package quota

import "reflect"

// SameState reports whether a and b hold the same quotas, settings and
// usage, whatever their counts of changes.
func SameState(a, b *Tree) bool {
	x, y := *a, *b
	x.changes, y.changes = 0, 0
	return reflect.DeepEqual(x, y)
}
