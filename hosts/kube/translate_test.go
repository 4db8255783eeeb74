package kube

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/importer/kueue"
	"github.com/fleetsched/fleet/topology"
)

func testTranslator(t *testing.T) *Translator {
	t.Helper()
	data, err := os.ReadFile("testdata/quota.yaml")
	require.NoError(t, err)
	q, err := kueue.Parse(data, kueue.Options{})
	require.NoError(t, err)
	cfg := testConfig("unit")
	tr, err := NewTranslator(&cfg, q)
	require.NoError(t, err)
	return tr
}

func gpuPod(name string, gpus int64, labels, ann map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", Labels: labels, Annotations: ann},
		Spec: corev1.PodSpec{SchedulerName: "fleet", PriorityClassName: "reserved-research",
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{podGPUs: *resource.NewQuantity(gpus, resource.DecimalSI)}}}}},
	}
}

func TestWorkloadFromPods(t *testing.T) {
	tr := testTranslator(t)
	group := map[string]string{LabelQueue: "research", LabelPodGroup: "g"}
	ann := map[string]string{AnnotationGroupTotal: "2", AnnotationRequiredTopology: "cloud.google.com/gce-topology-subblock",
		AnnotationPreemptible: "true", AnnotationCheckpointInterval: "10m", AnnotationSurvivesNodeLoss: "true"}
	cp := map[string]string{AnnotationLastCheckpoint: "2026-01-02T15:04:05Z"}
	for k, v := range ann {
		cp[k] = v
	}
	w, ordered, err := tr.Workload("team/g", []*corev1.Pod{gpuPod("g-1", 8, group, cp), gpuPod("g-0", 8, group, ann)})
	require.NoError(t, err)
	assert.Equal(t, []string{"g-0", "g-1"}, names(ordered), "pods in name order")
	assert.Equal(t, "team/g", w.ID)
	assert.Equal(t, "research", w.Queue)
	assert.Equal(t, "reserved-research", w.PriorityClass)
	assert.Equal(t, gang.Training, w.Shape)
	assert.Equal(t, []gang.PodSet{{Name: PodSetName, Count: 2, GPUsPerPod: 8}}, w.PodSets)
	assert.Equal(t, "subblock", w.Topology.Required)
	assert.True(t, w.Drain.Preemptible)
	assert.True(t, w.Drain.SurvivesNodeLoss)
	assert.Equal(t, 10*time.Minute, w.Drain.CheckpointInterval)
	assert.Equal(t, time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), w.Drain.LastCheckpoint)
	assert.NoError(t, Complete(w, ordered))
	assert.Error(t, Complete(w, ordered[:1]))
}

func TestWorkloadRefusals(t *testing.T) {
	tr := testTranslator(t)
	q := map[string]string{LabelQueue: "batch"}
	tests := []struct {
		name  string
		pods  []*corev1.Pod
		field string
		says  string
	}{
		{"no queue", []*corev1.Pod{gpuPod("p", 1, nil, nil)}, LabelQueue, "label the pod"},
		{"unknown queue", []*corev1.Pod{gpuPod("p", 1, map[string]string{LabelQueue: "x"}, nil)}, LabelQueue, "name one of batch, inference, research"},
		{"bad duration", []*corev1.Pod{gpuPod("p", 1, q, map[string]string{AnnotationCheckpointInterval: "soon"})}, AnnotationCheckpointInterval, "write one such as 10m"},
		{"bad bool", []*corev1.Pod{gpuPod("p", 1, q, map[string]string{AnnotationPreemptible: "yes please"})}, AnnotationPreemptible, "not true or false"},
		{"bad shape", []*corev1.Pod{gpuPod("p", 1, q, map[string]string{AnnotationShape: "huge"})}, AnnotationShape, "inference, training or batch"},
		{"bad topology", []*corev1.Pod{gpuPod("p", 1, q, map[string]string{AnnotationRequiredTopology: "rack"})}, AnnotationRequiredTopology, "is not a topology label"},
		{"bad checkpoint", []*corev1.Pod{gpuPod("p", 1, q, map[string]string{AnnotationLastCheckpoint: "yesterday"})}, AnnotationLastCheckpoint, "RFC 3339"},
		{"bad share", []*corev1.Pod{gpuPod("p", 0, q, map[string]string{AnnotationGPUShare: "2000"})}, AnnotationGPUShare, "1 to 1000"},
		{"bad count", []*corev1.Pod{gpuPod("p", 1, map[string]string{LabelQueue: "batch", LabelPodGroup: "g"},
			map[string]string{AnnotationGroupTotal: "many"})}, AnnotationGroupTotal, "is not a pod count"},
		{"mixed pods", []*corev1.Pod{gpuPod("a", 1, q, nil), gpuPod("b", 2, q, nil)}, "resources", "every pod of a group asks the same"},
		{"elastic group", []*corev1.Pod{
			gpuPod("g-0", 1, map[string]string{LabelQueue: "batch", LabelPodGroup: "g"}, map[string]string{AnnotationGroupTotal: "2", AnnotationMinCount: "1"}),
			gpuPod("g-1", 1, map[string]string{LabelQueue: "batch", LabelPodGroup: "g"}, map[string]string{AnnotationGroupTotal: "2", AnnotationMinCount: "1"})},
			AnnotationMinCount, "full size only; remove the annotation or set it to 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tr.Workload("team/p", tc.pods)
			var pe *PodError
			require.True(t, errors.As(err, &pe), "got %v", err)
			assert.Equal(t, tc.field, pe.Field)
			assert.Contains(t, pe.Message, tc.says)
		})
	}
}

func TestNodesFromCluster(t *testing.T) {
	tr := testTranslator(t)
	node := func(name, sb string, gpus int64, ready corev1.ConditionStatus, cordon bool) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				"cloud.google.com/gce-topology-block": "b", "cloud.google.com/gce-topology-subblock": sb,
				"cloud.google.com/gce-topology-host": "h-" + name, "cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}},
			Spec: corev1.NodeSpec{Unschedulable: cordon},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{podGPUs: *resource.NewQuantity(gpus, resource.DecimalSI)},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}},
		}
	}
	nodes := []*corev1.Node{node("n2", "s1", 8, corev1.ConditionTrue, false), node("n1", "s0", 8, corev1.ConditionFalse, false),
		node("n3", "s1", 8, corev1.ConditionTrue, true)}
	res, err := tr.Nodes(nodes, map[string]int{"n2": 2})
	require.NoError(t, err)
	require.Len(t, res.Spec.Nodes, 3)
	assert.Equal(t, "n1", res.Spec.Nodes[0].Name)
	assert.Equal(t, "H100", res.Spec.Nodes[0].Flavor, "the ResourceFlavor whose nodeLabels match")
	assert.Equal(t, 6, res.Spec.Nodes[1].GPUs, "GPUs held by pods fleet does not schedule are left out")
	assert.Equal(t, topology.Down, Health(nodes[1]))
	assert.Equal(t, topology.Healthy, Health(nodes[0]))
	assert.Equal(t, topology.Cordoned, Health(nodes[2]))
}

func TestDrainNoteRoundTrip(t *testing.T) {
	n := DrainNote{Reason: "reclaim", Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Deadline: time.Date(2026, 1, 1, 0, 2, 0, 0, time.UTC), Beneficiaries: []string{"team/a", "team/b"}}
	got, ok := DecodeDrain(EncodeDrain(n))
	require.True(t, ok)
	assert.Equal(t, n, got)
	_, ok = DecodeDrain("{")
	assert.False(t, ok)
}

func TestGraceSeconds(t *testing.T) {
	for _, tc := range []struct {
		left time.Duration
		want int64
	}{{120 * time.Second, 120}, {119900 * time.Millisecond, 119}, {0, 1}, {-time.Second, 1}} {
		assert.Equal(t, tc.want, graceSeconds(tc.left), "left %s", tc.left)
	}
}

// The configuration file in deploy/ parses, and flags win over it.
func TestConfigFile(t *testing.T) {
	data, err := os.ReadFile("deploy/config.yaml")
	require.NoError(t, err)
	var cm struct {
		Data map[string]string `json:"data"`
	}
	docs := strings.Split(string(data), "\n---\n")
	require.NoError(t, yaml.Unmarshal([]byte(docs[0]), &cm))
	file := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(file, []byte(cm.Data["config.yaml"]), 0o600))
	cfg, err := ParseFlags(flag.NewFlagSet("t", flag.ContinueOnError), []string{"-config", file, "-binders", "4", "-identity", "me"})
	require.NoError(t, err)
	assert.Equal(t, "fleet", cfg.SchedulerName)
	assert.Equal(t, "fleet-system/fleet-quota", cfg.QuotaConfigMap)
	assert.Equal(t, 4, cfg.Binders)
	assert.Equal(t, 5*time.Second, cfg.Period.Duration)
	assert.Equal(t, 2*time.Minute, cfg.Classes[1].Grace.Duration)
	assert.Equal(t, "me", cfg.Identity)

	_, err = ParseFlags(flag.NewFlagSet("t", flag.ContinueOnError), []string{"-binders", "2"})
	assert.ErrorIs(t, err, ErrConfig, "no quota named")
	require.NoError(t, os.WriteFile(file, []byte("schedulerName: x\nnope: 1\n"), 0o600))
	_, err = ParseFlags(flag.NewFlagSet("t", flag.ContinueOnError), []string{"-config", file})
	assert.ErrorIs(t, err, ErrConfig, "unknown field")
}

// FuzzWorkload: any annotation values give a valid workload or a
// *PodError, never a panic.
func FuzzWorkload(f *testing.F) {
	f.Add("2", "10m", "true", "cloud.google.com/gce-topology-subblock", "2026-01-02T15:04:05Z", "500", "1", "training")
	f.Add("x", "-1s", "maybe", "rack", "now", "0", "9", "")
	f.Fuzz(func(t *testing.T, total, interval, preempt, topo, last, share, minCount, shape string) {
		tr := testTranslator(t)
		ann := map[string]string{AnnotationGroupTotal: total, AnnotationCheckpointInterval: interval,
			AnnotationPreemptible: preempt, AnnotationRequiredTopology: topo, AnnotationLastCheckpoint: last,
			AnnotationGPUShare: share, AnnotationMinCount: minCount, AnnotationShape: shape}
		labels := map[string]string{LabelQueue: "research", LabelPodGroup: "g"}
		w, _, err := tr.Workload("team/g", []*corev1.Pod{gpuPod("g-0", 0, labels, ann), gpuPod("g-1", 0, labels, ann)})
		if err != nil {
			var pe *PodError
			require.True(t, errors.As(err, &pe), "%v", err)
			require.NotEmpty(t, pe.Message)
			return
		}
		require.NoError(t, w.Validate())
	})
}
