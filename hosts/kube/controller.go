package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/hosts/host"
	"github.com/fleetsched/fleet/importer/kueue"
	"github.com/fleetsched/fleet/metrics/prom"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Clock is where the controller reads the time: the wall clock in
// production, a virtual one in tests.
type Clock = host.Clock

// WallClock reads time.Now.
type WallClock = host.WallClock

// Queue keys besides the workload keys ("w:" + namespace/name).
const (
	keyCycle = "cycle"
	keyNodes = "nodes"
	keyWork  = "w:"
)

// Index names of the pod informer.
const (
	indexWorkload = "fleet-workload"
	indexForeign  = "foreign-node"
)

// Options are what a Controller is built from besides its Config.
type Options struct {
	// Client is the API server's clientset the controller reads and writes.
	Client kubernetes.Interface
	// StatusClient writes PodScheduled=False conditions and Events, under
	// a rate limit of its own (Config.StatusQPS; NewClients makes both).
	// Nil: Client.
	StatusClient kubernetes.Interface
	// Quota is the Kueue file's parsed objects.
	Quota *kueue.Result
	// Clock defaults to WallClock.
	Clock  Clock
	Logger *slog.Logger
	// Metrics, when set, receives the scheduler's events and snapshots.
	Metrics *prom.Exporter
	// Policy is fleet's policy (zero: the defaults).
	Policy fleet.Policy
}

// tracked is what the controller knows of one workload it gave the
// scheduler.
type tracked struct {
	spec gang.Workload
	// pods is the pod names the workload was submitted or adopted with.
	pods    []string
	running bool
	// slots is, for a running workload, the node of every pod index.
	slots []string
	// slotPod names the pod bound to each slot ("" while none is).
	slotPod []string
	drain   *DrainNote
	// deadline of its drain.
	deadline   time.Time
	killed     bool
	checkpoint time.Time
	// message is the PodScheduled=False message last written.
	message string
	// nominated is the nominatedNodeName last written per pod index.
	nominated []string
	// What the State keeps besides (state.go): the submission number, the
	// admission's Borrowing and Flavors, the drain's claims and a move's
	// new place, and the nomination's ReadyBy.
	seq       uint64
	borrowing bool
	flavors   []map[string]string // the admission's Flavors
	claims    []fleet.ClaimView
	moveTo    []fleet.PodAssignment
	readyBy   time.Time
	// kept and keptJSON are its part of the State as last encoded.
	kept     WorkState
	keptJSON []byte
}

// Controller schedules the pods whose schedulerName is the configured
// one: informers fill listers, handlers enqueue keys, and one worker
// reconciles them with the Scheduler and writes the API.
type Controller struct {
	cfg    Config
	client kubernetes.Interface
	// statusClient writes conditions and Events (Options.StatusClient).
	statusClient kubernetes.Interface
	clock        Clock
	log          *slog.Logger
	metrics      *prom.Exporter
	tr           *Translator
	policy       fleet.Policy
	quota        quota.Spec
	classes      []fleet.PriorityClass

	factory informers.SharedInformerFactory
	podInf  cache.SharedIndexInformer
	pods    corelisters.PodLister
	nodes   corelisters.NodeLister
	queue   workqueue.TypedRateLimitingInterface[string]
	// status writes conditions off the worker once statusRuns (Lead).
	status     *statusLane
	statusRuns atomic.Bool
	// events holds the Events recorded and not yet written (writeEvents).
	events chan *corev1.Event

	mu sync.Mutex // guards what follows; never held across an API call
	s  *fleet.Scheduler
	// fleetKey fingerprints the topology the scheduler was built with.
	fleetKey string
	health   map[string]topology.Health
	work     map[string]*tracked
	// ended holds workloads the scheduler ended (node lost, failed hot
	// swap) whose pods are still being removed: they are not resubmitted
	// until every pod is gone.
	ended map[string]bool
	// bad holds the last refusal written per workload key.
	bad    map[string]string
	leader bool
	cycles int
	// seq is the last submission number given (State.Seq); kept is the
	// State the next rebuild reads.
	seq  uint64
	kept State
	// defragSpent is State.DefragSpent: what automatic defragmentation
	// spent within the last hour, from each cycle's defrag drains.
	defragSpent []fleet.DefragSpend
	// stateSum and stateRV are the last state written and its
	// ConfigMap's resourceVersion; only the worker touches them.
	stateSum [32]byte
	stateRV  string
	// stateForce, keptWorks and keptSeq tell encodeState to assemble
	// the State again: a write failed, or work came or went.
	stateForce bool
	keptWorks  int
	keptSeq    uint64
	// The quota's source (quota.go): the ConfigMap's informer, and what
	// was read last; only the worker touches quotaSum and quotaErr.
	quotaFactory informers.SharedInformerFactory
	quotaCMs     cache.Indexer
	quotaSum     [32]byte
	quotaErr     string
	// observe, when set (tests), sees every cycle's decisions under the
	// lock.
	observe func(fleet.Decisions)
}

// New builds a controller. Nothing runs until Run.
func New(cfg Config, o Options) (*Controller, error) {
	if o.Client == nil {
		return nil, fmt.Errorf("%w: no client", ErrConfig)
	}
	if o.Quota == nil {
		return nil, fmt.Errorf("%w: no quota (Kueue objects)", ErrConfig)
	}
	tr, err := NewTranslator(&cfg, o.Quota)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		cfg: cfg, client: o.Client, statusClient: o.StatusClient, clock: o.Clock, log: o.Logger, metrics: o.Metrics, tr: tr,
		policy: o.Policy, quota: o.Quota.Spec,
		health: map[string]topology.Health{}, work: map[string]*tracked{},
		ended: map[string]bool{}, bad: map[string]string{}, status: newStatusLane(),
		events: make(chan *corev1.Event, eventBuffer),
	}
	if c.statusClient == nil {
		c.statusClient = o.Client
	}
	if c.clock == nil {
		c.clock = WallClock{}
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	for _, k := range cfg.Classes {
		c.classes = append(c.classes, fleet.PriorityClass{Name: k.Name, Value: k.Value,
			Grace: k.Grace.Duration, MinRuntime: k.MinRuntime.Duration})
	}
	if len(c.classes) == 0 {
		for _, pc := range o.Quota.PriorityClasses {
			c.classes = append(c.classes, fleet.PriorityClass{Name: pc.Name, Value: pc.Value})
		}
	}
	c.factory = informers.NewSharedInformerFactory(o.Client, 0)
	c.podInf = c.factory.Core().V1().Pods().Informer()
	name := cfg.SchedulerName
	if err := c.podInf.AddIndexers(cache.Indexers{
		indexWorkload: func(obj any) ([]string, error) {
			p, ok := obj.(*corev1.Pod)
			if !ok || p.Spec.SchedulerName != name {
				return nil, nil
			}
			return []string{WorkloadKey(p)}, nil
		},
		indexForeign: func(obj any) ([]string, error) {
			p, ok := obj.(*corev1.Pod)
			if !ok || p.Spec.SchedulerName == name || p.Spec.NodeName == "" || Terminal(p) {
				return nil, nil
			}
			return []string{p.Spec.NodeName}, nil
		},
	}); err != nil {
		return nil, err
	}
	c.pods = c.factory.Core().V1().Pods().Lister()
	c.nodes = c.factory.Core().V1().Nodes().Lister()
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "fleet"})
	_, err = c.podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podChanged,
		UpdateFunc: func(old, cur any) { c.podChanged(cur) },
		DeleteFunc: c.podChanged,
	})
	if err != nil {
		return nil, err
	}
	_, err = c.factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.queue.Add(keyNodes) },
		UpdateFunc: func(any, any) { c.queue.Add(keyNodes) },
		DeleteFunc: func(any) { c.queue.Add(keyNodes) },
	})
	if err != nil {
		return nil, err
	}
	if err := c.watchQuota(); err != nil {
		return nil, err
	}
	return c, nil
}

// podChanged only enqueues: the key of a pod fleet schedules, or the
// nodes for a pod that takes capacity fleet does not manage.
func (c *Controller) podChanged(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if p.Spec.SchedulerName == c.cfg.SchedulerName {
		c.queue.Add(keyWork + WorkloadKey(p))
		return
	}
	if p.Spec.NodeName != "" && ForeignGPUs(p) > 0 {
		c.queue.Add(keyNodes)
	}
}

// StartInformers starts the informers and waits for their caches.
func (c *Controller) StartInformers(ctx context.Context) error {
	for _, f := range []informers.SharedInformerFactory{c.factory, c.quotaFactory} {
		if f == nil {
			continue
		}
		f.Start(ctx.Done())
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("kube: cache of %v did not sync", typ)
			}
		}
	}
	return nil
}

// Lead runs the scheduling loop until ctx ends: it rebuilds the state
// from the cluster, then reconciles keys. The informers must be started.
func (c *Controller) Lead(ctx context.Context) error {
	go c.writeEvents(ctx)
	// The quota as its source says it now; a fleet the quotas do not fit
	// (nodes not registered yet) is retried every period until it does.
	c.syncQuota(ctx)
	for {
		st, err := c.loadState(ctx)
		var acts []action
		if err == nil {
			c.mu.Lock()
			c.kept, c.s = st, nil
			acts, err = c.rebuild(c.clock.Now())
			c.leader = err == nil
			c.mu.Unlock()
		}
		if err == nil {
			c.persist(ctx)
			c.carryOut(ctx, acts)
			break
		}
		c.log.Error("rebuild from the cluster", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.cfg.Period.Duration):
		}
	}
	c.writeStatus(ctx)
	c.statusRuns.Store(true)
	go func() {
		_ = host.Every(ctx, c.cfg.Period.Duration, func() {
			c.queue.Add(keyCycle)
			if c.cfg.QuotaFile != "" {
				c.queue.Add(keyQuota)
			}
		})
		c.queue.ShutDown()
	}()
	for c.next(ctx) {
	}
	c.mu.Lock()
	c.leader = false
	c.mu.Unlock()
	return ctx.Err()
}

// Leading reports whether the loop runs and has rebuilt its state.
func (c *Controller) Leading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// Kick asks for a scheduling cycle now (tests move their clock, then
// kick).
func (c *Controller) Kick() { c.queue.Add(keyCycle) }

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if ctx.Err() != nil {
		return false
	}
	var acts []action
	var err error
	switch {
	case key == keyCycle:
		acts = c.cycle()
	case key == keyNodes:
		acts, err = c.syncNodes()
	case key == keyQuota:
		c.syncQuota(ctx)
	default:
		var changed bool
		acts, changed = c.syncWorkload(key[len(keyWork):])
		if changed {
			c.queue.Add(keyCycle)
		}
	}
	if err != nil {
		c.log.Error("reconcile", "key", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	if key == keyCycle || key == keyNodes {
		c.persist(ctx)
	}
	c.carryOut(ctx, acts)
	return true
}

// Scheduler gives f the scheduler under the controller's lock (for
// metrics and tests); f must not keep it.
func (c *Controller) Scheduler(f func(*fleet.Scheduler)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s != nil {
		f(c.s)
	}
}

// workloadPods lists the pods fleet schedules under one workload key.
func (c *Controller) workloadPods(key string) []*corev1.Pod {
	objs, err := c.podInf.GetIndexer().ByIndex(indexWorkload, key)
	if err != nil {
		return nil
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*corev1.Pod))
	}
	return pods
}

// foreignGPUs sums, per node, the GPUs pods fleet does not schedule hold.
func (c *Controller) foreignGPUs() map[string]int {
	used := map[string]int{}
	idx := c.podInf.GetIndexer()
	for _, node := range idx.ListIndexFuncValues(indexForeign) {
		objs, _ := idx.ByIndex(indexForeign, node)
		for _, o := range objs {
			used[node] += ForeignGPUs(o.(*corev1.Pod))
		}
	}
	return used
}

// fleetSpec builds the topology from the node lister.
func (c *Controller) fleetSpec() (topology.Spec, string, map[string]topology.Health, error) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return topology.Spec{}, "", nil, err
	}
	res, err := c.tr.Nodes(nodes, c.foreignGPUs())
	if err != nil {
		return topology.Spec{}, "", nil, err
	}
	health := map[string]topology.Health{}
	for _, n := range nodes {
		health[n.Name] = Health(n)
	}
	key := fmt.Sprintf("%v|%v", res.Spec.Levels, res.Spec.Nodes)
	return res.Spec, key, health, nil
}

// syncNodes rebuilds the scheduler when the fleet's shape changed (nodes
// added, removed, relabelled, capacity taken by others) and reports
// health changes otherwise.
func (c *Controller) syncNodes() ([]action, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s == nil {
		return nil, nil
	}
	_, key, health, err := c.fleetSpec()
	if err != nil {
		return nil, err
	}
	now := c.clock.Now()
	if key != c.fleetKey {
		c.log.Info("fleet changed: rebuilding from the cluster")
		c.kept = c.stateOf()
		acts, err := c.rebuild(now)
		if err != nil {
			return nil, err
		}
		c.queue.Add(keyCycle)
		return acts, nil
	}
	var acts []action
	for _, ch := range host.SyncHealth(c.s, now, c.health, health, c.log) {
		for _, id := range ch.Ended {
			acts = append(acts, c.endWorkload(id, "its node "+ch.Node+" is down")...)
		}
	}
	c.queue.Add(keyCycle)
	return acts, nil
}

// endWorkload forgets a workload the scheduler ended and deletes its pods.
func (c *Controller) endWorkload(id, why string) []action {
	t := c.work[id]
	delete(c.work, id)
	c.ended[id] = true
	var acts []action
	if t == nil {
		return nil
	}
	for _, p := range c.workloadPods(id) {
		if p.DeletionTimestamp == nil {
			acts = append(acts, deletePod(podRef{id, p.Name}, 0, "Failed", why))
		}
	}
	return acts
}

// rebuild makes a new scheduler from what the cluster shows, in the
// order fleet.Adoption gives: running work (bound pods; terminating ones
// under a drain, its deadline, reason and beneficiaries read back from
// AnnotationDrain) in the order it started, then pending work (nominated
// where status.nominatedNodeName says) in the order it was created, then
// the health of cordoned and down nodes. What the pods do not show comes
// from c.kept (the State). It returns the actions that carry out what
// the State recorded and the pods do not show yet (a drain decided, its
// pods not yet deleted), those that end a gang missing a pod whose place
// the State does not know, and, for a workload with a pod bound to a node
// gone from the cluster, the deletions of its pods. c.mu is held.
func (c *Controller) rebuild(now time.Time) ([]action, error) {
	spec, key, health, err := c.fleetSpec()
	if err != nil {
		return nil, err
	}
	q := c.quota
	if c.s != nil {
		q = c.s.Quota()
	}
	s, err := fleet.New(fleet.Config{Topology: spec, Quota: q, Classes: c.classes, Policy: c.policy})
	if err != nil {
		return nil, fmt.Errorf("kube: the cluster's fleet: %w", err)
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	c.seq = max(c.seq, c.kept.Seq)
	c.defragSpent = nil
	if spent := recentSpend(c.kept.DefragSpent, now); len(spent) > 0 {
		if err := s.AdoptDefragSpent(now, spent); err != nil {
			c.log.Warn("the defragmentation budget's spending is not adopted: the hour starts afresh", "err", err)
		} else {
			c.defragSpent = spent
		}
	}
	downSince := map[string]time.Time{}
	for _, n := range nodes {
		if Health(n) != topology.Down {
			continue
		}
		downSince[n.Name] = now
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && !cond.LastTransitionTime.IsZero() {
				downSince[n.Name] = cond.LastTransitionTime.Time
			}
		}
	}
	groups := map[string][]*corev1.Pod{}
	idx := c.podInf.GetIndexer()
	for _, key := range idx.ListIndexFuncValues(indexWorkload) {
		for _, p := range c.workloadPods(key) {
			if !Terminal(p) {
				groups[key] = append(groups[key], p)
			}
		}
	}
	exists := func(id string) bool { return len(groups[id]) > 0 }
	type adopted struct {
		a fleet.Adoption
		t *tracked
	}
	var running, pending []adopted
	var acts []action
	var gone []string
	for key, pods := range groups {
		a, t, err := c.adoption(key, pods, now, downSince, exists)
		if errors.Is(err, errNodeGone) {
			gone = append(gone, key)
			c.log.Info("ended", "workload", key, "err", err)
			continue
		}
		if errors.Is(err, errIncomplete) {
			c.log.Warn("gang ended", "workload", key, "err", err)
			acts = append(acts, c.endIncomplete(key, pods)...)
			continue
		}
		if err != nil {
			c.log.Debug("not adopted", "workload", key, "err", err)
			continue
		}
		if a.Started.IsZero() {
			pending = append(pending, adopted{a, t})
		} else {
			running = append(running, adopted{a, t})
		}
	}
	slices.SortFunc(running, func(x, y adopted) int {
		return cmp.Or(x.a.Started.Compare(y.a.Started), cmp.Compare(x.a.Workload.ID, y.a.Workload.ID))
	})
	slices.SortFunc(pending, func(x, y adopted) int {
		return cmp.Or(cmp.Compare(seqOrLast(x.a.Seq), seqOrLast(y.a.Seq)),
			x.a.Submitted.Compare(y.a.Submitted), cmp.Compare(x.a.Workload.ID, y.a.Workload.ID))
	})
	work := map[string]*tracked{}
	for _, x := range slices.Concat(running, pending) {
		if x.a.Seq == 0 {
			c.seq++
			x.a.Seq, x.t.seq = c.seq, c.seq
		}
		// A nomination the fleet cannot hold any more (a node went away):
		// the workload queues again without it.
		dropped, err := host.Adopt(s, now, x.a)
		if err != nil && x.a.Drain != nil && len(x.a.Drain.Claims) > 0 {
			c.log.Warn("drain's claims not adopted", "workload", x.a.Workload.ID, "err", err)
			// Claims that no longer add up (a beneficiary gone, a node
			// relabelled): the nominations adopted after it derive theirs.
			x.a.Drain.Claims, x.t.claims = nil, nil
			dropped, err = host.Adopt(s, now, x.a)
		}
		if dropped != nil {
			c.log.Warn("nomination not adopted", "workload", x.a.Workload.ID, "err", dropped)
			x.t.readyBy = time.Time{}
		}
		if err != nil {
			c.log.Warn("adopt", "workload", x.a.Workload.ID, "err", err)
			continue
		}
		work[x.a.Workload.ID] = x.t
		acts = append(acts, c.resumeDrain(x.t, groups[x.a.Workload.ID], now)...)
		if x.t.running && slices.Contains(x.t.slotPod, "") {
			c.queue.Add(keyWork + x.a.Workload.ID) // its unbound pods take the empty places
		}
	}
	for node, h := range health {
		if h == topology.Healthy {
			continue
		}
		if _, err := s.SetNodeHealth(now, node, h); err != nil && !errors.Is(err, fleet.ErrUnknownNode) {
			return nil, err
		}
	}
	for id, t := range c.work {
		if nt, ok := work[id]; ok {
			nt.message = t.message
		}
	}
	c.log.Info("rebuilt from the cluster", "nodes", len(spec.Nodes), "running", len(running), "pending", len(pending))
	c.s, c.fleetKey, c.health, c.work = s, key, health, work
	c.kept = State{}
	slices.Sort(gone)
	for _, id := range gone {
		acts = append(acts, c.endGone(id)...)
	}
	return acts, nil
}

// errNodeGone is adoption's refusal of a workload with a pod bound to a
// node the cluster no longer has.
var errNodeGone = errors.New("a pod is bound to a node gone from the cluster")

// endGone ends a workload a node gone from the cluster broke: all or
// nothing, its pods on the nodes still there are deleted too, as when a
// node goes down under a gang, and its owner's new pods are a new
// submission.
func (c *Controller) endGone(id string) []action {
	c.ended[id] = true
	var acts []action
	for _, p := range c.workloadPods(id) {
		if p.DeletionTimestamp == nil {
			acts = append(acts, deletePod(podRef{id, p.Name}, 0, "Failed",
				"a pod of its group is bound to a node gone from the cluster"))
		}
	}
	return acts
}

// adoption reads one workload from its live pods and the State: pending
// (no pod bound), or running (every pod bound, or some, with the State
// saying where the others run), with its drain and lost pods. A gang part
// bound whose other pods' places the State does not know is errIncomplete.
func (c *Controller) adoption(key string, pods []*corev1.Pod, now time.Time,
	downSince map[string]time.Time, exists func(string) bool) (fleet.Adoption, *tracked, error) {
	w, ordered, err := c.tr.Workload(key, pods)
	if err != nil {
		return fleet.Adoption{}, nil, err
	}
	ws := c.kept.Work[key]
	a := fleet.Adoption{Workload: w, Seq: ws.Seq}
	for _, p := range ordered {
		if t := p.CreationTimestamp.Time; a.Submitted.IsZero() || t.Before(a.Submitted) {
			a.Submitted = t
		}
	}
	if a.Submitted.After(now) {
		a.Submitted = now
	}
	t := &tracked{spec: w, pods: names(ordered), checkpoint: w.Drain.LastCheckpoint, seq: ws.Seq}
	bound := 0
	for _, p := range ordered {
		if p.Spec.NodeName == "" {
			continue
		}
		bound++
		if _, err := c.nodes.Get(p.Spec.NodeName); apierrors.IsNotFound(err) {
			return a, nil, fmt.Errorf("%w: pod %s on %s", errNodeGone, p.Name, p.Spec.NodeName)
		}
	}
	gpus := w.PodSets[0].GPUsPerPod
	count := w.PodSets[0].Count
	if bound == 0 {
		if err := Complete(w, ordered); err != nil {
			return a, nil, err
		}
		shown := make([]string, len(ordered))
		for i, p := range ordered {
			shown[i] = p.Status.NominatedNodeName
		}
		if !slices.Contains(shown, "") {
			t.nominated = shown
		}
		nodes := t.nominated
		if _, kept := c.kept.Work[key]; kept {
			// The State is written before the pods are patched: its
			// nomination, or none, is the latest decided.
			nodes = nil
			if len(ws.Nominated) == len(ordered) {
				nodes, a.NominatedReadyBy, t.readyBy = ws.Nominated, ws.ReadyBy, ws.ReadyBy
			}
		}
		for i, n := range nodes {
			a.Nominated = append(a.Nominated, fleet.PodAssignment{PodSet: PodSetName, Index: i, Node: n, GPUs: gpus})
		}
		return a, t, nil
	}
	t.running = true
	t.slots = make([]string, count)
	t.slotPod = make([]string, count)
	switch {
	case bound == len(ordered) && len(ordered) == count:
		for i, p := range ordered {
			t.slots[i], t.slotPod[i] = p.Spec.NodeName, p.Name
		}
	case len(ws.Nodes) == count:
		// Pods deleted, or not bound yet, while no leader ran: each keeps
		// its place, as under a leader that never stopped. A bound pod
		// takes a slot on its node (the pods of a gang are alike); the
		// slots left wait for their pods.
		copy(t.slots, ws.Nodes)
		for _, p := range ordered {
			if p.Spec.NodeName == "" {
				continue
			}
			i := -1
			for k, n := range t.slots {
				if n == p.Spec.NodeName && t.slotPod[k] == "" {
					i = k
					break
				}
			}
			if i < 0 {
				return a, nil, fmt.Errorf("%w: pod %s is bound to %s, outside the places kept", errIncomplete, p.Name, p.Spec.NodeName)
			}
			t.slotPod[i] = p.Name
		}
	default:
		return a, nil, fmt.Errorf("%w: %d of %d pods bound, and where the others run was not kept", errIncomplete, bound, count)
	}
	byName := map[string]*corev1.Pod{}
	for _, p := range ordered {
		byName[p.Name] = p
	}
	for i, node := range t.slots {
		pa := fleet.PodAssignment{PodSet: PodSetName, Index: i, Node: node, GPUs: gpus}
		if p := byName[t.slotPod[i]]; p != nil {
			if at := admitted(p); !at.IsZero() && (a.Started.IsZero() || at.Before(a.Started)) {
				a.Started = at
			}
		}
		if since, down := downSince[node]; down && w.Drain.SurvivesNodeLoss {
			a.Lost = append(a.Lost, fleet.LostPodView{Pod: pa, Since: since})
			continue
		}
		a.Pods = append(a.Pods, pa)
	}
	if a.Started.IsZero() || a.Started.After(now) {
		a.Started = now
	}
	if a.Submitted.After(a.Started) {
		a.Submitted = a.Started
	}
	for i := range a.Lost {
		a.Lost[i].Since = clamp(a.Lost[i].Since, a.Started, now)
	}
	a.Borrowing, t.borrowing = ws.Borrowing, ws.Borrowing
	a.Flavors, t.flavors = ws.Flavors, ws.Flavors
	note, deadline, terminating := drainOf(ordered)
	switch {
	case ws.Drain != nil:
		note, deadline = ws.Drain.DrainNote, ws.Drain.Deadline
	case !terminating:
		return a, t, nil
	}
	var reason gang.DrainReason
	if note.Reason == "" || reason.UnmarshalText([]byte(note.Reason)) != nil {
		return a, t, nil
	}
	d := host.DrainRecord{Since: clamp(note.Since, a.Started, now), Deadline: deadline, Reason: reason,
		Beneficiaries: note.Beneficiaries}.Adopted(exists)
	if k := note.KillAsked; !k.IsZero() && !d.Deadline.After(now) {
		d.KillAsked = clamp(k, d.Deadline, now)
	}
	if ws.Drain != nil {
		for _, cl := range ws.Drain.Claims {
			if slices.Contains(d.Live, cl.Beneficiary) {
				d.Claims = append(d.Claims, cl)
			}
		}
		d.MoveTo = ws.Drain.MoveTo
	}
	a.Drain = d
	note.KillAsked = d.KillAsked
	t.drain, t.deadline, t.killed = &note, deadline, !d.KillAsked.IsZero()
	t.claims, t.moveTo = d.Claims, d.MoveTo
	return a, t, nil
}

// errIncomplete is a gang part bound whose other pods' places are not
// known: it is ended (endIncomplete).
var errIncomplete = errors.New("kube: a gang part bound")

// endIncomplete ends a gang found part bound after a failover, with no
// record of where its missing pods ran: its GPUs cannot be charged
// whole, and a gang that does not run whole has failed, so its pods are
// deleted, as when a rank fails; its owner's new pods queue it again.
func (c *Controller) endIncomplete(key string, pods []*corev1.Pod) []action {
	c.ended[key] = true
	var acts []action
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			acts = append(acts, deletePod(podRef{key, p.Name}, 0, "Failed",
				"a pod of the group went away while no scheduler led, and where it ran was not kept: the group is ended"))
		}
	}
	return acts
}

// resumeDrain carries out a drain the State recorded whose pods are not
// terminating: the leader that decided it stopped before deleting them.
func (c *Controller) resumeDrain(t *tracked, pods []*corev1.Pod, now time.Time) []action {
	if t.drain == nil || slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }) {
		return nil
	}
	var acts []action
	grace := graceSeconds(t.deadline.Sub(now))
	for _, name := range t.slotPod {
		switch {
		case name == "":
		case t.killed:
			acts = append(acts, deletePod(podRef{t.spec.ID, name}, 0, "Killed", "killed: its drain deadline passed"))
		default:
			acts = append(acts, drainPod(podRef{t.spec.ID, name}, *t.drain, grace,
				fmt.Sprintf("drained (%s) for %v: checkpoint and exit within %ds", t.drain.Reason, t.drain.Beneficiaries, grace)))
		}
	}
	return acts
}

// seqOrLast orders work without a submission number after the rest.
func seqOrLast(seq uint64) uint64 {
	if seq == 0 {
		return math.MaxUint64
	}
	return seq
}

func clamp(t, lo, hi time.Time) time.Time {
	if t.Before(lo) {
		t = lo
	}
	if t.After(hi) {
		t = hi
	}
	return t
}

// admitted is when the scheduler bound the pod (AnnotationAdmitted, which
// the binding carries), else when its PodScheduled condition turned true.
func admitted(p *corev1.Pod) time.Time {
	if v := p.Annotations[AnnotationAdmitted]; v != "" {
		if at, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return at
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// drainOf reads the drain of a workload whose pods terminate: the note
// the scheduler wrote, and the deadline (the note's, else the earliest
// deletionTimestamp).
func drainOf(pods []*corev1.Pod) (DrainNote, time.Time, bool) {
	var note DrainNote
	var deadline time.Time
	found := false
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			continue
		}
		found = true
		if n, ok := DecodeDrain(p.Annotations[AnnotationDrain]); ok {
			note = n
			if !n.Deadline.IsZero() {
				deadline = n.Deadline
			}
		}
		if deadline.IsZero() || p.DeletionTimestamp.Time.Before(deadline) && note.Deadline.IsZero() {
			deadline = p.DeletionTimestamp.Time
		}
	}
	return note, deadline, found
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

// syncWorkload brings the scheduler's view of one workload in line with
// its pods: submit, cancel, exit, checkpoint, or a refusal to write.
// changed says whether a cycle may now decide something new.
func (c *Controller) syncWorkload(key string) (acts []action, changed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s == nil {
		return nil, false
	}
	now := c.clock.Now()
	all := c.workloadPods(key)
	var live []*corev1.Pod
	failed, succeeded := 0, 0
	for _, p := range all {
		switch {
		case p.Status.Phase == corev1.PodFailed:
			failed++
		case p.Status.Phase == corev1.PodSucceeded:
			succeeded++
		case p.DeletionTimestamp == nil || p.Spec.NodeName != "":
			live = append(live, p)
		}
	}
	if c.ended[key] {
		if len(all) == 0 {
			delete(c.ended, key)
		}
		return nil, false
	}
	t := c.work[key]
	if t != nil && t.running {
		if len(live) == 0 {
			how := gang.ExitCancelled
			switch {
			case t.killed:
				how = gang.ExitKilled
			case t.drain != nil:
				how = gang.ExitDrained
			case failed > 0:
				how = gang.ExitFailed
			case succeeded > 0:
				how = gang.ExitFinished
			}
			if err := c.s.Exited(now, key, how); err != nil {
				c.log.Warn("exit", "workload", key, "err", err)
			}
			delete(c.work, key)
			c.ended[key] = len(all) > 0
			if len(all) == 0 {
				delete(c.ended, key)
			}
			return nil, true
		}
		if failed > 0 && t.drain == nil {
			// A rank failed on its own: the gang fails whole, and what is
			// left of it is stopped, as Kueue's pod groups do.
			if err := c.s.Exited(now, key, gang.ExitFailed); err != nil {
				c.log.Warn("exit", "workload", key, "err", err)
			}
			return c.endWorkload(key, "a pod of the group failed"), true
		}
		if at, err := LastCheckpoint(live); err == nil && at.After(t.checkpoint) && !at.After(now) {
			if err := c.s.Checkpointed(now, key, at); err == nil {
				t.checkpoint = at
				changed = true
			}
		}
		return c.fillSlots(t, live), changed
	}
	if len(live) == 0 {
		if t != nil {
			_ = c.s.Cancel(now, key)
			delete(c.work, key)
			return nil, true
		}
		delete(c.bad, key)
		return nil, false
	}
	if t == nil && slices.ContainsFunc(live, func(p *corev1.Pod) bool { return p.Spec.NodeName != "" }) {
		// Pods bound that the scheduler does not know (bound by an earlier
		// leader after this one rebuilt): adopted as they run.
		a, nt, err := c.adoption(key, live, now, nil, func(string) bool { return true })
		if errors.Is(err, errNodeGone) {
			c.log.Info("ended", "workload", key, "err", err)
			return c.endGone(key), false
		}
		if err == nil && a.Seq == 0 {
			c.seq++
			a.Seq, nt.seq = c.seq, c.seq
		}
		if err == nil {
			err = c.s.Adopt(now, a)
		}
		if err != nil {
			c.log.Debug("not adopted", "workload", key, "err", err)
			return nil, false
		}
		c.work[key] = nt
		return nil, true
	}
	w, ordered, err := c.tr.Workload(key, live)
	if err == nil {
		err = Complete(w, ordered)
	}
	if t != nil {
		if err == nil && slices.Equal(t.pods, names(ordered)) {
			return nil, false
		}
		// The pods changed under a waiting workload: withdraw it and
		// submit what the pods say now.
		_ = c.s.Cancel(now, key)
		delete(c.work, key)
		changed = true
	}
	if err == nil {
		err = c.s.Submit(now, w)
		c.log.Debug("submit", "workload", key, "err", err)
		if err == nil {
			delete(c.bad, key)
			c.seq++
			c.work[key] = &tracked{spec: w, pods: names(ordered), checkpoint: w.Drain.LastCheckpoint, seq: c.seq}
			return nil, true
		}
	}
	msg := err.Error()
	var pe *PodError
	if errors.As(err, &pe) {
		msg = pe.Message
	}
	c.bad[key] = msg
	return c.conditions(key, ordered, msg), changed
}

// fillSlots binds unbound pods of a running workload (a pod recreated
// after a failed binding or a lost node) to the slots left without one.
func (c *Controller) fillSlots(t *tracked, live []*corev1.Pod) []action {
	present := map[string]*corev1.Pod{}
	var unbound []*corev1.Pod
	taken := map[string]bool{}
	for _, name := range t.slotPod {
		taken[name] = name != ""
	}
	for _, p := range live {
		present[p.Name] = p
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && !taken[p.Name] {
			unbound = append(unbound, p)
		}
	}
	slices.SortFunc(unbound, func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	var acts []action
	for i := range t.slots {
		if p := present[t.slotPod[i]]; t.slotPod[i] != "" && p != nil {
			if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && t.slots[i] != "" {
				// Its binding failed and it is still there: bind it again
				// (a binding already done is refused as a conflict).
				acts = append(acts, bind(podRef{t.spec.ID, p.Name}, t.slots[i], c.clock.Now()))
			}
			continue
		}
		t.slotPod[i] = ""
		if len(unbound) == 0 || t.slots[i] == "" {
			continue
		}
		p := unbound[0]
		unbound = unbound[1:]
		t.slotPod[i] = p.Name
		acts = append(acts, bind(podRef{t.spec.ID, p.Name}, t.slots[i], c.clock.Now()))
	}
	return acts
}

// noteDefragSpend records what the cycle's defragmentation moves cost
// (the policy's automatic moves: this host asks for no other) and forgets
// what is an hour old, for the state.
func (c *Controller) noteDefragSpend(now time.Time, drains []fleet.Drain) {
	cost := 0.0
	for _, x := range drains {
		if x.Reason == gang.DrainDefrag {
			cost += x.LostGPUSeconds
		}
	}
	spent := recentSpend(c.defragSpent, now)
	if cost > 0 {
		spent = append(spent, fleet.DefragSpend{At: now, LostGPUSeconds: cost})
	}
	if !slices.EqualFunc(spent, c.defragSpent, func(a, b fleet.DefragSpend) bool {
		return a.At.Equal(b.At) && a.LostGPUSeconds == b.LostGPUSeconds
	}) {
		c.stateForce = true
	}
	c.defragSpent = spent
}

// recentSpend is the part of spent within the hour before now.
func recentSpend(spent []fleet.DefragSpend, now time.Time) []fleet.DefragSpend {
	return slices.DeleteFunc(slices.Clone(spent), func(x fleet.DefragSpend) bool {
		return x.At.After(now) || now.Sub(x.At) >= time.Hour
	})
}

// cycle runs one scheduling cycle and turns its decisions into API
// writes, carried out after the lock is released.
func (c *Controller) cycle() []action {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s == nil {
		return nil
	}
	now := c.clock.Now()
	d := c.s.Schedule(now)
	c.cycles++
	c.noteDefragSpend(now, d.Drain)
	c.log.Debug("cycle", "admit", len(d.Admit), "drain", len(d.Drain), "kill", len(d.Kill), "work", len(c.work))
	if c.observe != nil {
		c.observe(d)
	}
	if c.metrics != nil {
		c.metrics.RecordAll(d.Events)
		if len(d.Events) > 0 || c.cycles%10 == 1 {
			// The gauges (GPUs free, allocated, per queue) follow the
			// fleet when something happened, and every tenth cycle.
			c.metrics.ObserveSnapshot(c.s.Snapshot())
		}
	}
	var acts []action
	for _, k := range d.Kill {
		t := c.work[k.ID]
		if k.Of != "" || t == nil || t.killed {
			continue
		}
		t.killed = true
		if t.drain != nil && t.drain.KillAsked.IsZero() {
			note := *t.drain
			note.KillAsked = now
			t.drain = &note
		}
		for _, p := range c.workloadPods(k.ID) {
			acts = append(acts, deletePod(podRef{k.ID, p.Name}, 0, "Killed",
				fmt.Sprintf("killed: its drain deadline %s passed %s ago", k.Deadline.Format(time.RFC3339), k.Overdue.Round(time.Second))))
		}
	}
	for _, dr := range d.Drain {
		if dr.Of != "" {
			continue // elastic shrinks are not carried out by this host
		}
		t := c.work[dr.ID]
		if t == nil {
			continue
		}
		note := DrainNote{Reason: dr.Reason.String(), Since: now, Deadline: dr.Deadline, Beneficiaries: dr.Beneficiaries}
		t.drain, t.deadline = &note, dr.Deadline
		grace := graceSeconds(dr.Deadline.Sub(now))
		msg := fmt.Sprintf("drained (%s) for %v: checkpoint and exit within %ds", dr.Reason, dr.Beneficiaries, grace)
		for _, name := range t.slotPod {
			if name != "" {
				acts = append(acts, drainPod(podRef{dr.ID, name}, note, grace, msg))
			}
		}
	}
	for _, id := range d.Failed {
		acts = append(acts, c.endWorkload(id, "no replacement node was found in time")...)
	}
	for _, r := range d.Replace {
		t := c.work[r.ID]
		if t == nil || r.Index >= len(t.slots) {
			continue
		}
		t.slots[r.Index] = r.NewNode
		if name := t.slotPod[r.Index]; name != "" {
			acts = append(acts, deletePod(podRef{r.ID, name}, 0, "NodeLost", "its node "+r.OldNode+" is down"))
			t.slotPod[r.Index] = ""
		}
		acts = append(acts, c.fillSlots(t, c.workloadPods(r.ID))...)
	}
	for _, a := range d.Admit {
		t := c.work[a.ID]
		if t == nil {
			continue
		}
		t.running, t.borrowing, t.flavors = true, a.Borrowing, a.Flavors
		t.nominated, t.readyBy = nil, time.Time{}
		t.slots = host.Nodes(a.Pods, len(t.pods))
		t.slotPod = slices.Clone(t.pods)
		for i, name := range t.pods {
			acts = append(acts, bind(podRef{a.ID, name}, t.slots[i], now))
		}
	}
	var snap *fleet.Snapshot
	if len(d.Drain) > 0 || c.anyNominated() || c.anyDraining() {
		sn := c.s.Snapshot()
		snap = &sn
		acts = append(acts, c.beneficiaries(snap)...)
	}
	acts = append(acts, c.pending(snap)...)
	return acts
}

// pending writes, for every waiting workload, its nominations and the
// reason it waits, when they changed.
func (c *Controller) pending(snap *fleet.Snapshot) []action {
	var acts []action
	noms := map[string][]string{}
	if snap != nil {
		for _, p := range snap.Pending {
			if p.Nomination == nil {
				continue
			}
			noms[p.ID] = host.Nodes(p.Nomination.Pods, p.Spec.PodSets[0].Count)
			if t := c.work[p.ID]; t != nil {
				t.readyBy = p.Nomination.ReadyBy
			}
		}
	}
	ids := make([]string, 0, len(c.work))
	for id, t := range c.work {
		if !t.running {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		t := c.work[id]
		if nodes, ok := noms[id]; ok && !slices.Equal(nodes, t.nominated) {
			t.nominated = nodes
			for i, name := range t.pods {
				if i < len(nodes) {
					acts = append(acts, nominate(podRef{id, name}, nodes[i]))
				}
			}
		} else if !ok && t.nominated != nil {
			t.nominated, t.readyBy = nil, time.Time{}
			for _, name := range t.pods {
				acts = append(acts, nominate(podRef{id, name}, ""))
			}
		}
		msg, ok := host.Waiting(c.s, id)
		if !ok || msg == t.message {
			continue
		}
		t.message = msg
		acts = append(acts, c.conditions(id, c.workloadPods(id), msg)...)
	}
	return acts
}

// Sentence is Explain's sentence as a pod condition says it: without the
// time of the cycle, which the condition's lastTransitionTime carries, so
// that the condition changes only when the reason does.
func Sentence(x fleet.Explanation) string { return host.Sentence(x) }

// conditions writes the PodScheduled=False condition, and an Event, on
// the pods whose condition does not say msg already: a pod's own status is
// the record, so a new leader does not write it again.
func (c *Controller) conditions(key string, pods []*corev1.Pod, msg string) []action {
	var acts []action
	for _, p := range pods {
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			continue
		}
		if cur, ok := scheduledFalse(p); ok && cur == msg {
			continue
		}
		acts = append(acts, condition(podRef{key, p.Name}, msg, "FailedScheduling"))
	}
	return acts
}

// scheduledFalse is the message of a pod's PodScheduled=False condition.
func scheduledFalse(p *corev1.Pod) (string, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Message, true
		}
	}
	return "", false
}

// beneficiaries keeps every draining victim's AnnotationDrain listing all
// the workloads counting on it: those its Drain named and those whose
// nominations claim its GPUs (in the same cycle or a later one), so that a
// new leader can give each its nomination back.
func (c *Controller) beneficiaries(snap *fleet.Snapshot) []action {
	var acts []action
	for _, r := range snap.Running {
		t := c.work[r.ID]
		if r.Drain == nil || t == nil || t.drain == nil {
			continue
		}
		t.claims, t.moveTo = r.Drain.Claims, r.Drain.MoveTo
		all := slices.Clone(r.Drain.Beneficiaries)
		for _, cl := range r.Drain.Claims {
			if !slices.Contains(all, cl.Beneficiary) {
				all = append(all, cl.Beneficiary)
			}
		}
		for _, b := range r.Drain.Live {
			if !slices.Contains(all, b) {
				all = append(all, b)
			}
		}
		if slices.Equal(all, t.drain.Beneficiaries) {
			continue
		}
		note := *t.drain
		note.Beneficiaries = all
		t.drain = &note
		for _, name := range t.slotPod {
			if name != "" {
				acts = append(acts, annotate(podRef{r.ID, name}, note))
			}
		}
	}
	return acts
}

func (c *Controller) anyDraining() bool {
	for _, t := range c.work {
		if t.drain != nil {
			return true
		}
	}
	return false
}

func (c *Controller) anyNominated() bool {
	for _, t := range c.work {
		if t.nominated != nil {
			return true
		}
	}
	return false
}

// graceSeconds is a drain's time left as the pod deletion's grace period:
// whole seconds, rounded down so that the kubelet's kill comes no later
// than the deadline, and at least 1 (0 would be a kill).
func graceSeconds(left time.Duration) int64 {
	s := int64(left / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// Cycles is the number of scheduling cycles run so far.
func (c *Controller) Cycles() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cycles
}

// isGone reports an API error that means the pod is not there any more.
func isGone(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsConflict(err) }
