package kueue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/kueue"
)

// A quota beyond int64 is apimachinery's Value() 0 (or a wrapped number):
// read as such it would be a quota of 0. Nominal quotas and both limits
// refuse it, naming the object, the field and the quantity as written.
func TestQuotaBeyondInt64IsRefused(t *testing.T) {
	doc := func(nominal, limit string) string {
		return `apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  cohortName: c
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: f
      resources:
      - {name: nvidia.com/gpu, nominalQuota: ` + nominal + limit + `}
`
	}
	for _, field := range []string{"nominalQuota", "borrowingLimit", "lendingLimit"} {
		for _, q := range []string{"1e19", `"1e19"`, `"100E"`, `"9223372036854775808"`, `"18446744073709551617"`, `"8Ei"`, `"2Pi"`} {
			t.Run(field+"="+q, func(t *testing.T) {
				y := doc("8", ", "+field+": "+q)
				if field == "nominalQuota" {
					y = doc(q, "")
				}
				_, err := kueue.Parse([]byte(y), kueue.Options{})
				require.ErrorIs(t, err, kueue.ErrQuantity)
				var oe *kueue.ObjectError
				require.ErrorAs(t, err, &oe)
				assert.Equal(t, "ClusterQueue", oe.Kind)
				assert.Equal(t, "q", oe.Name)
				assert.Equal(t, "spec.resourceGroups[0].flavors[0].resources[0]."+field, oe.Field)
				assert.Contains(t, oe.Detail, "out of range")
			})
		}
	}
}
