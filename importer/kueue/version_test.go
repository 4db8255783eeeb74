package kueue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/importer/kueue"
)

// Kueue v0.1 served ClusterQueue and ResourceFlavor as v1alpha1 and v0.2
// served them and LocalQueue as v1alpha2, in the schema v1beta1 replaced:
// the refusal says that schema is not supported, not that the kind was
// never served. Kinds a version never had, and unknown versions, say so.
func TestPreV1beta1SchemaIsRefusedAsUnsupported(t *testing.T) {
	tests := []struct {
		apiVersion, kind string
		want             string
	}{
		{"v1alpha1", "ClusterQueue", `ClusterQueue kueue.x-k8s.io/v1alpha1: the pre-v1beta1 schema (Kueue v0.1-v0.2) is not supported`},
		{"v1alpha1", "ResourceFlavor", `ResourceFlavor kueue.x-k8s.io/v1alpha1: the pre-v1beta1 schema (Kueue v0.1-v0.2) is not supported`},
		{"v1alpha2", "ClusterQueue", `ClusterQueue kueue.x-k8s.io/v1alpha2: the pre-v1beta1 schema (Kueue v0.1-v0.2) is not supported`},
		{"v1alpha2", "LocalQueue", `LocalQueue kueue.x-k8s.io/v1alpha2: the pre-v1beta1 schema (Kueue v0.1-v0.2) is not supported`},
		{"v1alpha1", "WorkloadPriorityClass", `WorkloadPriorityClass kueue.x-k8s.io/v1alpha1: never served in this version`},
		{"v1alpha2", "Cohort", `Cohort kueue.x-k8s.io/v1alpha2: never served in this version`},
		{"v2", "Cohort", `Cohort kueue.x-k8s.io/v2: not a Kueue API version fleet reads`},
	}
	for _, tt := range tests {
		t.Run(tt.apiVersion+"/"+tt.kind, func(t *testing.T) {
			y := "apiVersion: kueue.x-k8s.io/" + tt.apiVersion + "\nkind: " + tt.kind + "\nmetadata: {name: a}\nspec:\n  cohort: c\n"
			_, err := kueue.Parse([]byte(y), kueue.Options{})
			require.ErrorIs(t, err, kueue.ErrVersion)
			var oe *kueue.ObjectError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tt.kind, oe.Kind)
			assert.Equal(t, "a", oe.Name)
			assert.Equal(t, "apiVersion", oe.Field)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "not served")
		})
	}
}
