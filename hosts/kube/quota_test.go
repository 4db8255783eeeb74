package kube

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/importer/kueue"
)

// quotaController is a controller whose scheduler runs the test quota on
// 256 nodes of 8 GPUs (2,048, all guaranteed), without an API server:
// applyQuota only talks to the scheduler.
func quotaController(t *testing.T) (*Controller, string) {
	t.Helper()
	yaml, err := os.ReadFile("testdata/quota.yaml")
	require.NoError(t, err)
	q, err := kueue.Parse(yaml, kueue.Options{})
	require.NoError(t, err)
	cfg := testConfig("unit")
	c, err := New(cfg, Options{Client: fake.NewClientset(), Quota: q, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	var nodes []*corev1.Node
	for i := range 256 {
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gpu-%03d", i), Labels: map[string]string{
				"cloud.google.com/gce-topology-block":    fmt.Sprintf("b-%d", i/64),
				"cloud.google.com/gce-topology-subblock": fmt.Sprintf("sb-%d", i/8),
				"cloud.google.com/gce-topology-host":     fmt.Sprintf("h-%03d", i),
				"cloud.google.com/gke-accelerator":       "nvidia-h100-80gb"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{podGPUs: *resource.NewQuantity(8, resource.DecimalSI)},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		})
	}
	res, err := c.tr.Nodes(nodes, nil)
	require.NoError(t, err)
	c.s, err = fleet.New(fleet.Config{Topology: res.Spec, Quota: q.Spec, Classes: c.classes})
	require.NoError(t, err)
	c.leader = true
	return c, string(yaml)
}

func TestApplyQuota(t *testing.T) {
	const batch = "- {name: nvidia.com/gpu, nominalQuota: 0}"
	for _, tc := range []struct {
		name    string
		edits   [][2]string // replacements in the YAML
		applied []string
		err     error // nil: applied
		want    string
	}{
		{name: "batch closes its borrowing",
			edits:   [][2]string{{batch, "- {name: nvidia.com/gpu, nominalQuota: 0, borrowingLimit: 0}"}},
			applied: []string{"batch"}},
		{name: "over capacity refused",
			edits: [][2]string{{"nominalQuota: 848}", "nominalQuota: 900}"}},
			err:   fleet.ErrOverCapacity},
		{name: "guarantee moved: two edits valid only together",
			edits:   [][2]string{{batch, "- {name: nvidia.com/gpu, nominalQuota: 16}"}, {"nominalQuota: 848}", "nominalQuota: 832}"}},
			applied: []string{"research", "batch"}},
		{name: "half of a move refused whole",
			edits: [][2]string{{batch, "- {name: nvidia.com/gpu, nominalQuota: 16}"}, {"nominalQuota: 848}", "nominalQuota: 840}"}},
			err:   fleet.ErrOverCapacity},
		{name: "a queue added",
			edits: [][2]string{{"kind: ClusterQueue\nmetadata:\n  name: batch", "kind: ClusterQueue\nmetadata:\n  name: evals"}},
			err:   errQuotaShape, want: "+queue evals"},
		{name: "a queue moved out of its cohort",
			edits: [][2]string{{"spec:\n  cohort: fleet\n  preemption:\n    withinClusterQueue: LowerPriority\n  resourceGroups", "spec:\n  preemption:\n    withinClusterQueue: LowerPriority\n  resourceGroups"}},
			err:   errQuotaShape, want: "batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, yaml := quotaController(t)
			before := c.s.Quota()
			for _, e := range tc.edits {
				require.Contains(t, yaml, e[0])
				yaml = strings.Replace(yaml, e[0], e[1], 1)
			}
			q, err := kueue.Parse([]byte(yaml), kueue.Options{})
			require.NoError(t, err)
			c.clock = fixedClock{time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
			applied, err := c.applyQuota(q.Spec)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.Contains(t, err.Error(), tc.want)
				assert.Equal(t, before, c.s.Quota(), "the quota in force after a refused edit")
				assert.Empty(t, applied)
				return
			}
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.applied, applied)
			assert.Equal(t, q.Spec, c.s.Quota())
		})
	}
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }
