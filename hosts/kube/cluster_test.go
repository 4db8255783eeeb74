package kube

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fleetsched/fleet"
)

// admissions records every Admission the scheduler decided, by pod.
type admissions struct {
	mu     sync.Mutex
	node   map[string]string // workload/index -> node
	admits map[string]fleet.Admission
	drains []fleet.Drain
}

func newAdmissions() *admissions {
	return &admissions{node: map[string]string{}, admits: map[string]fleet.Admission{}}
}

func (a *admissions) observe(d fleet.Decisions) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ad := range d.Admit {
		a.admits[ad.ID] = ad
		for _, p := range ad.Pods {
			a.node[fmt.Sprintf("%s#%d", ad.ID, p.Index)] = p.Node
		}
	}
	a.drains = append(a.drains, d.Drain...)
}

// podIndex is a pod's index in its workload: pods sort by name.
func podIndex(pods []corev1.Pod) map[string]string {
	byGroup := map[string][]string{}
	for _, p := range pods {
		k := WorkloadKey(&p)
		byGroup[k] = append(byGroup[k], p.Name)
	}
	out := map[string]string{}
	for k, names := range byGroup {
		sortStrings(names)
		for i, n := range names {
			out[n] = fmt.Sprintf("%s#%d", k, i)
		}
	}
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestClusterBindingsMatchAdmissions: the reference fleet (256 nodes of
// 8 GPUs, GKE labels) with the reference quotas; inference replicas,
// training gangs and batch pods created as pods are bound exactly where
// the scheduler's admissions put them, and no node holds more than 8 GPUs.
func TestClusterBindingsMatchAdmissions(t *testing.T) {
	cl := startCluster(t)
	cl.addNodes(t, 256)
	clock := &testClock{}
	adm := newAdmissions()
	ctx := t.Context()
	startKubelet(t, ctx, cl, clock)
	sched := startScheduler(t, cl, clock, "replica-a", adm.observe)

	for i := range 40 {
		cl.createPod(t, podSpec{name: fmt.Sprintf("serve-%02d", i), queue: "inference", class: "prod-inference", gpus: 1 + i%8})
	}
	for g := range 12 {
		cl.createGang(t, fmt.Sprintf("train-%02d", g), "research", "reserved-research", 8, 8,
			map[string]string{AnnotationRequiredTopology: "cloud.google.com/gce-topology-subblock",
				AnnotationPreemptible: "true", AnnotationCheckpointInterval: "10m"})
	}
	for i := range 200 {
		cl.createPod(t, podSpec{name: fmt.Sprintf("batch-%03d", i), queue: "batch", class: "preemptible-batch", gpus: 1,
			annotations: map[string]string{AnnotationPreemptible: "true"}})
	}
	total := 40 + 12*8 + 200
	eventually(t, 60*time.Second, "every pod bound", func() bool {
		bound := 0
		for _, p := range cl.listPods(t) {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == total
	})
	pods := cl.listPods(t)
	idx := podIndex(pods)
	perNode := map[string]int{}
	subblocks := map[string]map[string]bool{}
	adm.mu.Lock()
	defer adm.mu.Unlock()
	for _, p := range pods {
		want, ok := adm.node[idx[p.Name]]
		require.True(t, ok, "pod %s bound without an admission", p.Name)
		assert.Equal(t, want, p.Spec.NodeName, "pod %s", p.Name)
		perNode[p.Spec.NodeName] += int(p.Spec.Containers[0].Resources.Limits.Name(podGPUs, "").Value())
		if g := p.Labels[LabelPodGroup]; g != "" {
			if subblocks[g] == nil {
				subblocks[g] = map[string]bool{}
			}
			n, err := cl.client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			require.NoError(t, err)
			subblocks[g][n.Labels["cloud.google.com/gce-topology-subblock"]] = true
		}
	}
	assert.Len(t, adm.admits, 40+12+200)
	for node, gpus := range perNode {
		assert.LessOrEqual(t, gpus, 8, "node %s", node)
	}
	for g, sbs := range subblocks {
		assert.Len(t, sbs, 1, "gang %s spans subblocks %v", g, sbs)
	}
	t.Logf("%d pods bound as admitted on %d nodes; %d gangs each inside one subblock", len(pods), len(perNode), len(subblocks))

	// /metrics follows: every admission counted, and the gauges read the
	// fleet as bound.
	used := 0
	for _, gpus := range perNode {
		used += gpus
	}
	eventually(t, 30*time.Second, "the gauges follow the bindings", func() bool {
		return gathered(t, sched.reg, "fleet_gpus_free") == float64(256*8-used)
	})
	assert.Equal(t, float64(40+12+200), gathered(t, sched.reg, "fleet_admissions_total"))
	t.Logf("/metrics: %v GPUs free, %v admissions", gathered(t, sched.reg, "fleet_gpus_free"), gathered(t, sched.reg, "fleet_admissions_total"))
}

// gathered sums the samples of the metric family name in reg.
func gathered(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			switch {
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestClusterAllOrNothing: a watcher of every pod event sees each gang go
// from no pod bound to every pod bound within one binding pass, and the
// gangs that do not fit never get a pod bound. Kubernetes binds pods one
// at a time, so the pass itself is the only window where a gang is part
// bound; the watcher bounds it.
func TestClusterAllOrNothing(t *testing.T) {
	cl := startCluster(t)
	cl.addNodes(t, 256)
	clock := &testClock{}
	ctx := t.Context()
	startKubelet(t, ctx, cl, clock)

	w, err := cl.client.CoreV1().Pods("team").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	type gangSeen struct {
		bound       map[string]bool
		first, last time.Time
		partialMax  time.Duration
	}
	var mu sync.Mutex
	seen := map[string]*gangSeen{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || p.Spec.NodeName == "" {
				continue
			}
			g := p.Labels[LabelPodGroup]
			mu.Lock()
			gs := seen[g]
			if gs == nil {
				gs = &gangSeen{bound: map[string]bool{}}
				seen[g] = gs
			}
			if !gs.bound[p.Name] {
				gs.bound[p.Name] = true
				now := time.Now()
				if gs.first.IsZero() {
					gs.first = now
				}
				gs.last = now
			}
			mu.Unlock()
		}
	}()
	startScheduler(t, cl, clock, "replica-a", nil)
	// 40 gangs of 8 nodes: research reaches its 848 GPUs and the 700
	// inference lends, 1,548 GPUs: 24 gangs; 16 must wait.
	for g := range 40 {
		cl.createGang(t, fmt.Sprintf("g-%02d", g), "research", "reserved-research", 8, 8,
			map[string]string{AnnotationRequiredTopology: "cloud.google.com/gce-topology-subblock"})
	}
	eventually(t, 60*time.Second, "24 gangs bound", func() bool {
		mu.Lock()
		defer mu.Unlock()
		full := 0
		for _, gs := range seen {
			if len(gs.bound) == 8 {
				full++
			}
		}
		return full == 24
	})
	time.Sleep(2 * time.Second) // let later cycles run: nothing more may bind
	mu.Lock()
	defer mu.Unlock()
	var worst time.Duration
	for g, gs := range seen {
		assert.Len(t, gs.bound, 8, "gang %s part bound", g)
		worst = max(worst, gs.last.Sub(gs.first))
	}
	assert.Len(t, seen, 24)
	assert.Less(t, worst, 5*time.Second, "a gang's binding pass")
	t.Logf("24 of 40 gangs bound whole, 16 left with no pod bound; longest binding pass %s", worst.Round(time.Millisecond))
}

// podCondition returns the PodScheduled condition's message.
func podCondition(p *corev1.Pod) (string, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message, true
		}
	}
	return "", false
}

func (c *cluster) pod(t testing.TB, name string) *corev1.Pod {
	p, err := c.client.CoreV1().Pods("team").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return p
}

// events lists the Events on a pod.
func (c *cluster) events(t testing.TB, name string) []corev1.Event {
	l, err := c.client.CoreV1().Events("team").List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + name})
	require.NoError(t, err)
	return l.Items
}

// TestClusterBadPods: each bad pod gets a PodScheduled=False condition and
// an Event saying what is wrong and what to change; the good pod next to
// them is bound and the scheduler runs on.
func TestClusterBadPods(t *testing.T) {
	cl := startCluster(t)
	cl.addNodes(t, 256)
	clock := &testClock{}
	ctx := t.Context()
	startKubelet(t, ctx, cl, clock)
	startScheduler(t, cl, clock, "replica-a", nil)

	cl.createPod(t, podSpec{name: "unknown-queue", queue: "nope", class: "preemptible-batch", gpus: 1})
	cl.createPod(t, podSpec{name: "no-queue", class: "preemptible-batch", gpus: 1})
	cl.createPod(t, podSpec{name: "bad-annotation", queue: "batch", class: "preemptible-batch", gpus: 1,
		annotations: map[string]string{AnnotationCheckpointInterval: "often"}})
	cl.createPod(t, podSpec{name: "bad-topology", queue: "batch", class: "preemptible-batch", gpus: 1,
		annotations: map[string]string{AnnotationRequiredTopology: "example.com/rack"}})
	cl.createPod(t, podSpec{name: "too-big", queue: "batch", class: "preemptible-batch", gpus: 16})
	for i := range 2 { // of 3
		cl.createPod(t, podSpec{name: fmt.Sprintf("short-%d", i), queue: "research", class: "reserved-research",
			group: "short", total: 3, gpus: 8})
	}
	cl.createPod(t, podSpec{name: "good", queue: "batch", class: "preemptible-batch", gpus: 1})

	want := map[string]string{
		"unknown-queue":  `LocalQueue "nope" is not defined in namespace team: name one of batch, inference, research`,
		"no-queue":       "no queue: label the pod " + LabelQueue,
		"bad-annotation": `"often" is not a duration`,
		"bad-topology":   `"example.com/rack" is not a topology label: write one of cloud.google.com/gce-topology-block`,
		"too-big":        "16",
		"short-0":        "pod group has fewer pods than its 3; it waits for the rest",
	}
	eventually(t, 30*time.Second, "the good pod bound", func() bool { return cl.pod(t, "good").Spec.NodeName != "" })
	for name, msg := range want {
		eventually(t, 20*time.Second, "condition on "+name, func() bool {
			got, ok := podCondition(cl.pod(t, name))
			return ok && strings.Contains(got, msg)
		})
		got, _ := podCondition(cl.pod(t, name))
		t.Logf("%-14s %s", name, got)
		evs := cl.events(t, name)
		require.NotEmpty(t, evs, "no Event on %s", name)
		assert.Contains(t, evs[0].Message, msg)
		assert.Equal(t, "FailedScheduling", evs[0].Reason)
		assert.Empty(t, cl.pod(t, name).Spec.NodeName)
	}
}

// TestClusterPendingGangExplains: a gang that cannot fit carries Explain's
// sentence as its condition, written once, not every cycle.
func TestClusterPendingGangExplains(t *testing.T) {
	cl := startCluster(t)
	cl.addNodes(t, 256)
	clock := &testClock{}
	ctx := t.Context()
	startKubelet(t, ctx, cl, clock)
	s := startScheduler(t, cl, clock, "replica-a", nil)

	// Inference takes its 1,200 GPUs, so it lends nothing; a gang of 856
	// GPUs is more than research's 848.
	for i := range 150 {
		cl.createPod(t, podSpec{name: fmt.Sprintf("serve-%03d", i), queue: "inference", class: "prod-inference", gpus: 8})
	}
	eventually(t, 30*time.Second, "inference bound", func() bool { return cl.pod(t, "serve-149").Spec.NodeName != "" })
	cl.createGang(t, "wide", "research", "reserved-research", 107, 8, nil)
	var explained string
	eventually(t, 30*time.Second, "Explain's sentence on the gang", func() bool {
		msg, ok := podCondition(cl.pod(t, "wide-0"))
		if msg != explained {
			t.Logf("wide-0 condition: %s", msg)
		}
		explained = msg
		return ok && strings.HasPrefix(msg, "team/wide: ")
	})
	var x fleet.Explanation
	s.c.Scheduler(func(sc *fleet.Scheduler) {
		var err error
		x, err = sc.Explain("team/wide")
		require.NoError(t, err)
	})
	assert.Equal(t, Sentence(x), explained)
	// The conditions are written pod by pod after the cycle: every pod of
	// the gang carries the same sentence once the writes are done.
	eventually(t, 30*time.Second, "the sentence on every pod of the gang", func() bool {
		for i := range 107 {
			if msg, _ := podCondition(cl.pod(t, fmt.Sprintf("wide-%d", i))); msg != explained {
				return false
			}
		}
		return true
	})
	cycles := s.c.Cycles()
	eventually(t, 20*time.Second, "three more cycles", func() bool { return s.c.Cycles() >= cycles+3 })
	var explains int
	for _, ev := range cl.events(t, "wide-0") {
		if strings.HasPrefix(ev.Message, "team/wide: ") {
			explains++
		}
	}
	assert.Equal(t, 1, explains, "the Event is written when the reason changes, not every cycle")
	t.Logf("wide-0: %s", explained)
}

// spikeSetup fills the fleet with research gangs that borrow inference's
// idle quota, runs them past their minimum runtime, then sends an
// inference spike that needs the borrowed GPUs back.
func spikeSetup(t *testing.T, cl *cluster, clock *testClock) {
	t.Helper()
	// 20 gangs of 8 nodes: 1,280 GPUs, 432 above research's 848.
	for g := range 20 {
		cl.createGang(t, fmt.Sprintf("train-%02d", g), "research", "reserved-research", 8, 8,
			map[string]string{AnnotationRequiredTopology: "cloud.google.com/gce-topology-subblock",
				AnnotationPreemptible: "true", AnnotationCheckpointInterval: "10m"})
	}
	eventually(t, 60*time.Second, "the training gangs running", func() bool {
		n := 0
		for _, p := range cl.listPods(t) {
			if p.Status.Phase == corev1.PodRunning {
				n++
			}
		}
		return n == 160
	})
	clock.Advance(6 * time.Minute) // past reserved-research's 5-minute minimum runtime
	// 150 replicas of 8 GPUs: 1,200 GPUs, inference's guarantee; 768 are free.
	for i := range 150 {
		cl.createPod(t, podSpec{name: fmt.Sprintf("serve-%03d", i), queue: "inference", class: "prod-inference", gpus: 8})
	}
}

// TestClusterInferenceSpike: the victims' pods are deleted with the
// drain contract's grace, the replicas waiting for them are nominated
// (status.nominatedNodeName), and once the victims are gone the replicas
// are bound on the freed nodes, within 5 minutes on the test's clock.
func TestClusterInferenceSpike(t *testing.T) {
	cl := startCluster(t)
	cl.addNodes(t, 256)
	clock := &testClock{}
	ctx := t.Context()
	kl := startKubelet(t, ctx, cl, clock)
	adm := newAdmissions()
	s := startScheduler(t, cl, clock, "replica-a", adm.observe)
	spikeSetup(t, cl, clock)
	spikeAt := clock.Now()
	s.c.Kick()

	var victims map[string]bool
	var nominated map[string]string
	eventually(t, 60*time.Second, "victims terminating and replicas nominated", func() bool {
		victims, nominated = map[string]bool{}, map[string]string{}
		for _, p := range cl.listPods(t) {
			if p.DeletionTimestamp != nil {
				victims[p.Labels[LabelPodGroup]] = true
			}
			if p.Status.NominatedNodeName != "" && p.Spec.NodeName == "" {
				nominated[p.Name] = p.Status.NominatedNodeName
			}
		}
		return len(victims) > 0 && len(nominated) > 0
	})
	for _, p := range cl.listPods(t) {
		if p.DeletionTimestamp == nil {
			continue
		}
		require.NotNil(t, p.DeletionGracePeriodSeconds)
		g := *p.DeletionGracePeriodSeconds
		assert.True(t, g >= 115 && g <= 120, "pod %s deleted with grace %ds, want the contract's 120s less the time since", p.Name, g)
		note, ok := DecodeDrain(p.Annotations[AnnotationDrain])
		require.True(t, ok, "pod %s has no drain note", p.Name)
		assert.NotEmpty(t, note.Beneficiaries)
	}
	freed := map[string]bool{}
	for _, p := range cl.listPods(t) {
		if p.DeletionTimestamp != nil {
			freed[p.Spec.NodeName] = true
		}
	}
	for name, node := range nominated {
		assert.True(t, freed[node], "replica %s nominated on %s, which no victim frees", name, node)
	}
	// The victims checkpoint and exit within their grace: the kubelet
	// removes them when it runs out.
	clock.Advance(121 * time.Second)
	eventually(t, 60*time.Second, "every replica bound", func() bool {
		s.c.Kick()
		n := 0
		for _, p := range cl.listPods(t) {
			if strings.HasPrefix(p.Name, "serve-") && p.Spec.NodeName != "" {
				n++
			}
		}
		return n == 150
	})
	back := clock.Now().Sub(spikeAt)
	assert.Less(t, back, 5*time.Minute)
	for _, p := range cl.listPods(t) {
		if want, ok := nominated[p.Name]; ok {
			assert.Equal(t, want, p.Spec.NodeName, "replica %s bound off its nomination", p.Name)
		}
	}
	_ = kl
	t.Logf("%d victims drained with the contract's grace, %d replicas nominated, all 150 bound %s after the spike (test clock)",
		len(victims), len(nominated), back.Round(time.Second))
}

// TestClusterLeaderFailoverMidDrain: the leader is killed, without
// cleanup, while victims drain for the spike; the second replica takes
// the Lease, rebuilds from the cluster, and drains no victim twice,
// extends no deadline, picks no extra victim, and the replicas start.
func TestClusterLeaderFailoverMidDrain(t *testing.T) {
	cl := startCluster(t)
	cl.addNodes(t, 256)
	clock := &testClock{}
	ctx := t.Context()
	startKubelet(t, ctx, cl, clock)
	a := startScheduler(t, cl, clock, "replica-a", nil)
	eventually(t, 20*time.Second, "replica-a leads", a.c.Leading)
	b := startScheduler(t, cl, clock, "replica-b", nil)
	spikeSetup(t, cl, clock)
	a.c.Kick()

	type drained struct {
		deadline time.Time
		grace    int64
	}
	snapshot := func() (map[string]drained, map[string]string) {
		victims, nominated := map[string]drained{}, map[string]string{}
		for _, p := range cl.listPods(t) {
			if p.DeletionTimestamp != nil {
				victims[p.Name] = drained{p.DeletionTimestamp.Time, *p.DeletionGracePeriodSeconds}
			}
			if p.Status.NominatedNodeName != "" && p.Spec.NodeName == "" {
				nominated[p.Name] = p.Status.NominatedNodeName
			}
		}
		return victims, nominated
	}
	// The pass is over when every replica is bound or nominated and two
	// reads a second apart agree: replica-a is killed after its last
	// write, so that what replica-b finds is all replica-a decided.
	var before map[string]drained
	var nomBefore map[string]string
	eventually(t, 60*time.Second, "every replica bound or nominated, victims terminating", func() bool {
		v, nom := snapshot()
		bound := 0
		for _, p := range cl.listPods(t) {
			if strings.HasPrefix(p.Name, "serve-") && p.Spec.NodeName != "" {
				bound++
			}
		}
		settled := bound+len(nom) == 150 && len(v) > 0 && maps.Equal(v, before) && maps.Equal(nom, nomBefore)
		before, nomBefore = v, nom
		if !settled {
			time.Sleep(900 * time.Millisecond)
		}
		return settled
	})
	for _, p := range cl.listPods(t) {
		if p.DeletionTimestamp != nil {
			t.Logf("victim %s on %s: %s", p.Name, p.Spec.NodeName, p.Annotations[AnnotationDrain])
			break
		}
	}
	keptBefore := keptOf(a.c)
	require.NotEmpty(t, keptBefore.Claims, "no drain claims GPUs")
	a.stop() // killed: no cleanup, the Lease expires on its own
	killedAt := time.Now()
	require.False(t, b.c.Leading())
	eventually(t, 30*time.Second, "replica-b leads", b.c.Leading)
	t.Logf("replica-b leads %s after replica-a was killed", time.Since(killedAt).Round(100*time.Millisecond))
	// Several cycles of the new leader before the victims exit.
	cycles := b.c.Cycles()
	eventually(t, 20*time.Second, "three cycles of replica-b", func() bool { return b.c.Cycles() >= cycles+3 })
	after, nomAfter := snapshot()
	assert.Equal(t, before, after, "victims and their deadlines after the failover")
	assert.Equal(t, nomBefore, nomAfter, "nominations after the failover")
	// What the pods do not show came back from the state ConfigMap: each
	// drain's claims, each nomination's target and ready time.
	keptAfter := keptOf(b.c)
	assert.Equal(t, keptBefore.Deadlines, keptAfter.Deadlines, "drain deadlines after the failover")
	assert.Equal(t, keptBefore.Claims, keptAfter.Claims, "drain claims after the failover")
	assert.Equal(t, keptBefore.Targets, keptAfter.Targets, "nomination targets after the failover")
	assert.Equal(t, keptBefore.ReadyBy, keptAfter.ReadyBy, "nomination ready times after the failover")
	for _, ev := range cl.listEvents(t, "Preempted") {
		assert.Equal(t, "replica-a", ev.ReportingInstance, "a drain by the new leader: %s %s", ev.InvolvedObject.Name, ev.Message)
	}
	clock.Advance(121 * time.Second)
	eventually(t, 60*time.Second, "every replica bound", func() bool {
		b.c.Kick()
		n := 0
		for _, p := range cl.listPods(t) {
			if strings.HasPrefix(p.Name, "serve-") && p.Spec.NodeName != "" {
				n++
			}
		}
		return n == 150
	})
	for _, p := range cl.listPods(t) {
		if want, ok := nomBefore[p.Name]; ok {
			assert.Equal(t, want, p.Spec.NodeName, "replica %s bound off its nomination", p.Name)
		}
	}
	t.Logf("%d victim pods drained once with unchanged deadlines, %d replicas nominated by replica-a, bound by replica-b; "+
		"%d drains' claims and %d nominations' ready times kept", len(before), len(nomBefore), len(keptBefore.Claims), len(keptBefore.ReadyBy))
}

// listEvents lists the test namespace's Events of one reason.
func (c *cluster) listEvents(t testing.TB, reason string) []corev1.Event {
	l, err := c.client.CoreV1().Events("team").List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + reason})
	require.NoError(t, err)
	return l.Items
}

// TestClusterNodeNotReadyHotSwap: a node under a gang that survives node
// loss goes NotReady; its pod is deleted and the replacement pod the
// owner creates is bound inside the gang's subblock.
func TestClusterNodeNotReadyHotSwap(t *testing.T) {
	cl := startCluster(t)
	cl.addNodes(t, 256)
	clock := &testClock{}
	ctx := t.Context()
	startKubelet(t, ctx, cl, clock)
	startScheduler(t, cl, clock, "replica-a", nil)
	// 7 pods in a subblock of 8 nodes: one node stays free for a swap.
	cl.createGang(t, "swap", "research", "reserved-research", 7, 8,
		map[string]string{AnnotationRequiredTopology: "cloud.google.com/gce-topology-subblock",
			AnnotationSurvivesNodeLoss: "true", AnnotationPreemptible: "true", AnnotationCheckpointInterval: "10m"})
	eventually(t, 30*time.Second, "the gang bound", func() bool { return cl.pod(t, "swap-6").Spec.NodeName != "" })
	lostNode := cl.pod(t, "swap-3").Spec.NodeName
	node, err := cl.client.CoreV1().Nodes().Get(ctx, lostNode, metav1.GetOptions{})
	require.NoError(t, err)
	subblock := node.Labels["cloud.google.com/gce-topology-subblock"]
	// Fill the rest of the fleet, so that the swap must find its node in
	// the gang's subblock.
	cl.setReady(t, lostNode, false)
	eventually(t, 30*time.Second, "the lost pod deleted", func() bool {
		_, err := cl.client.CoreV1().Pods("team").Get(ctx, "swap-3", metav1.GetOptions{})
		return err != nil
	})
	// The owner (a Job or JobSet controller) recreates the rank.
	cl.createPod(t, podSpec{name: "swap-3", queue: "research", class: "reserved-research", group: "swap", total: 7, gpus: 8,
		annotations: map[string]string{AnnotationRequiredTopology: "cloud.google.com/gce-topology-subblock",
			AnnotationSurvivesNodeLoss: "true", AnnotationPreemptible: "true", AnnotationCheckpointInterval: "10m"}})
	eventually(t, 30*time.Second, "the replacement bound", func() bool { return cl.pod(t, "swap-3").Spec.NodeName != "" })
	newNode := cl.pod(t, "swap-3").Spec.NodeName
	assert.NotEqual(t, lostNode, newNode)
	n2, err := cl.client.CoreV1().Nodes().Get(ctx, newNode, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, subblock, n2.Labels["cloud.google.com/gce-topology-subblock"], "replacement outside the gang's subblock")
	for i := range 7 {
		assert.NotEmpty(t, cl.pod(t, fmt.Sprintf("swap-%d", i)).Spec.NodeName)
	}
	t.Logf("swap-3 lost with %s, rebound on %s in %s", lostNode, newNode, subblock)
}
