package k8s_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/k8s"
)

// An allocatable count beyond int64 is apimachinery's Value() 0 (or a
// wrapped number): read as such, the node would be left out as a CPU node
// under a misleading warning. It is refused, naming the node and the
// quantity as written.
func TestAllocatableBeyondInt64IsRefused(t *testing.T) {
	for _, q := range []string{`"1e19"`, "1e19", `"100E"`, `"9223372036854775808"`, `"18446744073709551617"`, `"8Ei"`, `"2Mi"`, "1e9999999", `"1e99999999"`} {
		t.Run(q, func(t *testing.T) {
			y := "kind: List\nitems:\n- metadata: {name: ok}\n  status: {allocatable: {nvidia.com/gpu: 8}}\n" +
				"- metadata: {name: huge}\n  status: {allocatable: {nvidia.com/gpu: " + q + "}}\n"
			_, err := k8s.ParseNodes([]byte(y), "")
			require.ErrorIs(t, err, k8s.ErrBadGPUs)
			var ke *k8s.Error
			require.ErrorAs(t, err, &ke)
			assert.Equal(t, "huge", ke.Node)
			assert.Equal(t, 1, ke.Index)
			assert.Contains(t, ke.Detail, "out of range")
		})
	}
}
