package kube

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/importer/kueue"
)

// kept is what a scheduler holds that the pods do not all show: the
// drains' deadlines and claims, the nominations' targets and ready times.
type kept struct {
	Deadlines map[string]int64
	Claims    map[string][]fleet.ClaimView
	Targets   map[string][]string
	ReadyBy   map[string]int64
}

func keptOf(c *Controller) kept {
	k := kept{Deadlines: map[string]int64{}, Claims: map[string][]fleet.ClaimView{},
		Targets: map[string][]string{}, ReadyBy: map[string]int64{}}
	c.Scheduler(func(s *fleet.Scheduler) {
		snap := s.Snapshot()
		for _, r := range snap.Running {
			if r.Drain == nil {
				continue
			}
			k.Deadlines[r.ID] = r.Drain.Deadline.UnixNano()
			cl := slices.Clone(r.Drain.Claims)
			slices.SortFunc(cl, func(a, b fleet.ClaimView) int {
				return cmp.Or(cmp.Compare(a.Beneficiary, b.Beneficiary), cmp.Compare(a.Node, b.Node))
			})
			k.Claims[r.ID] = cl
		}
		for _, p := range snap.Pending {
			if p.Nomination == nil {
				continue
			}
			nodes := make([]string, len(p.Nomination.Pods))
			for i, pa := range p.Nomination.Pods {
				nodes[i] = pa.Node
			}
			k.Targets[p.ID] = nodes
			k.ReadyBy[p.ID] = p.Nomination.ReadyBy.UnixNano()
		}
	})
	return k
}

// readState reads the state ConfigMap as the cluster holds it.
func (c *cluster) readState(t testing.TB) (State, *corev1.ConfigMap) {
	t.Helper()
	cm, err := c.client.CoreV1().ConfigMaps("fleet-system").Get(context.Background(), StateConfigMap, metav1.GetOptions{})
	require.NoError(t, err)
	st, err := DecodeState(cm.BinaryData[StateKey])
	require.NoError(t, err)
	return st, cm
}

// startSchedulerWith runs a replica of the given configuration under
// leader election.
func startSchedulerWith(t testing.TB, cl *cluster, clock *testClock, cfg Config, q *kueue.Result) *scheduler {
	t.Helper()
	rc := rest.CopyConfig(cl.cfg)
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	client, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("replica", cfg.Identity)
	c, err := New(cfg, Options{Client: client, Quota: q, Clock: clock, Logger: log})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	s := &scheduler{c: c, cancel: cancel, done: make(chan error, 1)}
	require.NoError(t, c.StartInformers(ctx))
	go func() { s.done <- c.Elect(ctx) }()
	t.Cleanup(s.stop)
	return s
}

// TestClusterQuotaEdit: the quota ConfigMap is edited while the scheduler
// runs. Closing batch's borrowing keeps its next pod waiting; an edit
// that would guarantee more GPUs than the fleet has is refused with a
// Warning Event on the ConfigMap, and the quota in force stays; moving 16
// GPUs of guarantee from research to batch, two edits that hold only
// together, admits the waiting pod.
func TestClusterQuotaEdit(t *testing.T) {
	cl := startCluster(t)
	cl.addNodes(t, 256)
	clock := &testClock{}
	ctx := t.Context()
	startKubelet(t, ctx, cl, clock)
	yaml, err := os.ReadFile("testdata/quota.yaml")
	require.NoError(t, err)
	cms := cl.client.CoreV1().ConfigMaps("fleet-system")
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fleet-quota"},
		Data: map[string]string{QuotaKey: string(yaml)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// edit replaces, in one update, each from (even) by its to (odd).
	edit := func(fromTo ...string) {
		t.Helper()
		cm, err := cms.Get(ctx, "fleet-quota", metav1.GetOptions{})
		require.NoError(t, err)
		for i := 0; i < len(fromTo); i += 2 {
			require.Contains(t, cm.Data[QuotaKey], fromTo[i])
			cm.Data[QuotaKey] = strings.Replace(cm.Data[QuotaKey], fromTo[i], fromTo[i+1], 1)
		}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	quotaEvents := func(reason string) []corev1.Event {
		l, err := cl.client.CoreV1().Events("fleet-system").List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=fleet-quota,reason=" + reason})
		require.NoError(t, err)
		return l.Items
	}
	cfg := testConfig("replica-a")
	cfg.QuotaFile, cfg.QuotaConfigMap = "", "fleet-system/fleet-quota"
	q, err := LoadQuota(ctx, cl.client, &cfg)
	require.NoError(t, err)
	s := startSchedulerWith(t, cl, clock, cfg, q)
	nominal := func(queue string) (int64, bool) {
		var n int64
		var limited bool
		s.c.Scheduler(func(sc *fleet.Scheduler) {
			for _, node := range sc.Quota().Nodes {
				if node.Name == queue {
					n = node.Quotas[0].Nominal
					_, limited = node.Quotas[0].BorrowingLimit.Get()
				}
			}
		})
		return n, limited
	}

	cl.createPod(t, podSpec{name: "batch-1", queue: "batch", class: "preemptible-batch", gpus: 8})
	eventually(t, 30*time.Second, "batch-1 bound, borrowing", func() bool { return cl.pod(t, "batch-1").Spec.NodeName != "" })

	const batchLine = "- {name: nvidia.com/gpu, nominalQuota: 0}"
	edit(batchLine, "- {name: nvidia.com/gpu, nominalQuota: 0, borrowingLimit: 0}")
	eventually(t, 30*time.Second, "the borrowing limit applied", func() bool { _, l := nominal("batch"); return l })
	eventually(t, 10*time.Second, "the QuotaApplied Event", func() bool { return len(quotaEvents(ReasonQuotaApplied)) > 0 })
	t.Logf("applied: %s", quotaEvents(ReasonQuotaApplied)[0].Message)
	cl.createPod(t, podSpec{name: "batch-2", queue: "batch", class: "preemptible-batch", gpus: 8})
	var why string
	eventually(t, 30*time.Second, "batch-2 waits, for quota", func() bool {
		var ok bool
		why, ok = podCondition(cl.pod(t, "batch-2"))
		return ok
	})
	assert.Empty(t, cl.pod(t, "batch-2").Spec.NodeName)
	t.Logf("batch-2 waits: %s", why)

	// 2,048 GPUs are guaranteed already: 52 more is over capacity.
	edit("nominalQuota: 848}", "nominalQuota: 900}")
	eventually(t, 30*time.Second, "the over-capacity edit refused", func() bool { return len(quotaEvents(ReasonQuotaRefused)) > 0 })
	refused := quotaEvents(ReasonQuotaRefused)[0]
	assert.Equal(t, corev1.EventTypeWarning, refused.Type)
	assert.Contains(t, refused.Message, "research")
	t.Logf("refused: %s", refused.Message)
	n, _ := nominal("research")
	assert.Equal(t, int64(848), n, "the quota in force after a refused edit")
	s.c.Kick()
	time.Sleep(time.Second)
	assert.Empty(t, cl.pod(t, "batch-2").Spec.NodeName, "batch-2 admitted by a refused edit")

	// Research gives 16 GPUs of guarantee to batch: batch-2 fits its own.
	edit("nominalQuota: 900}", "nominalQuota: 832}", "nominalQuota: 0, borrowingLimit: 0}", "nominalQuota: 16, borrowingLimit: 0}")
	eventually(t, 30*time.Second, "batch-2 bound on batch's new quota", func() bool {
		s.c.Kick()
		return cl.pod(t, "batch-2").Spec.NodeName != ""
	})
	n, _ = nominal("batch")
	assert.Equal(t, int64(16), n)
	n, _ = nominal("research")
	assert.Equal(t, int64(832), n)
}

// TestClusterFailoverGangMissingPod: while no leader runs, a pod of one
// running gang is deleted, and one of another gang whose places the
// state does not hold (as a state written before the gang started would
// not). The new leader adopts the first whole, its missing pod's GPUs
// still charged on its node, and binds the pod its owner recreates
// there; the second cannot be charged whole and is ended: its other
// pods are deleted.
func TestClusterFailoverGangMissingPod(t *testing.T) {
	cl := startCluster(t)
	cl.addNodes(t, 256)
	clock := &testClock{}
	ctx := t.Context()
	startKubelet(t, ctx, cl, clock)
	a := startScheduler(t, cl, clock, "replica-a", nil)
	eventually(t, 20*time.Second, "replica-a leads", a.c.Leading)
	ann := map[string]string{AnnotationRequiredTopology: "cloud.google.com/gce-topology-subblock",
		AnnotationPreemptible: "true", AnnotationCheckpointInterval: "10m"}
	cl.createGang(t, "keep", "research", "reserved-research", 4, 8, ann)
	cl.createGang(t, "gone", "research", "reserved-research", 4, 8, ann)
	eventually(t, 30*time.Second, "both gangs bound and kept", func() bool {
		cm, err := cl.client.CoreV1().ConfigMaps("fleet-system").Get(ctx, StateConfigMap, metav1.GetOptions{})
		if err != nil {
			return false // not written yet
		}
		st, err := DecodeState(cm.BinaryData[StateKey])
		require.NoError(t, err)
		return len(st.Work["team/keep"].Nodes) == 4 && len(st.Work["team/gone"].Nodes) == 4
	})
	keepNode := cl.pod(t, "keep-2").Spec.NodeName
	require.NotEmpty(t, keepNode)
	a.stop()

	zero := int64(0)
	for _, name := range []string{"keep-2", "gone-1"} {
		require.NoError(t, cl.client.CoreV1().Pods("team").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	}
	st, cm := cl.readState(t)
	delete(st.Work, "team/gone")
	data, err := EncodeState(&st)
	require.NoError(t, err)
	cm.BinaryData[StateKey] = data
	_, err = cl.client.CoreV1().ConfigMaps("fleet-system").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)

	b := startScheduler(t, cl, clock, "replica-b", nil)
	eventually(t, 30*time.Second, "replica-b leads", b.c.Leading)
	var keep fleet.RunningView
	found := false
	b.c.Scheduler(func(s *fleet.Scheduler) {
		for _, r := range s.Snapshot().Running {
			if r.ID == "team/keep" {
				keep, found = r, true
			}
			assert.NotEqual(t, "team/gone", r.ID, "the gang without its places adopted")
		}
	})
	require.True(t, found, "team/keep not adopted")
	assert.Equal(t, 32, keep.GPUs, "team/keep's GPUs charged")
	assert.True(t, slices.ContainsFunc(keep.Nodes, func(n fleet.NodeGPUs) bool { return n.Node == keepNode }),
		"the missing pod's node %s not charged: %v", keepNode, keep.Nodes)
	eventually(t, 30*time.Second, "team/gone's pods deleted", func() bool {
		for _, p := range cl.listPods(t) {
			if strings.HasPrefix(p.Name, "gone-") {
				return false
			}
		}
		return true
	})

	// The owner recreates the rank: it goes back to its place.
	cl.createPod(t, podSpec{name: "keep-2", queue: "research", class: "reserved-research", group: "keep", total: 4, gpus: 8,
		annotations: ann})
	eventually(t, 30*time.Second, "keep-2 bound again", func() bool { return cl.pod(t, "keep-2").Spec.NodeName != "" })
	assert.Equal(t, keepNode, cl.pod(t, "keep-2").Spec.NodeName, "keep-2 bound off its place")
	t.Logf("team/keep adopted with keep-2 missing (%d GPUs charged), keep-2 rebound on %s; team/gone ended", keep.GPUs, keepNode)
}
