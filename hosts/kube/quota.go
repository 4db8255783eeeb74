package kube

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/fleetsched/fleet/importer/kueue"
	"github.com/fleetsched/fleet/quota"
)

// keyQuota asks the worker to read the quota again.
const keyQuota = "quota"

// Reasons of the Events the quota's reading records.
const (
	// ReasonQuotaApplied is a Normal Event: an edit was applied live.
	ReasonQuotaApplied = "QuotaApplied"
	// ReasonQuotaRefused is a Warning Event: an edit was refused whole,
	// and the quota in force stays.
	ReasonQuotaRefused = "QuotaRefused"
)

// errQuotaShape refuses a live edit that adds, removes or moves a cohort
// or queue, or changes the flavors or resources quotas cover.
var errQuotaShape = errors.New("the quota tree's shape changed")

// watchQuota makes the quota ConfigMap's informer (one object, in its
// namespace): a change enqueues keyQuota. A quota file is read again
// every period instead (Lead).
func (c *Controller) watchQuota() error {
	if c.cfg.QuotaConfigMap == "" {
		return nil
	}
	ns, name, ok := strings.Cut(c.cfg.QuotaConfigMap, "/")
	if !ok {
		return fmt.Errorf("%w: quotaConfigMap %q: write namespace/name", ErrConfig, c.cfg.QuotaConfigMap)
	}
	c.quotaFactory = informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name }))
	inf := c.quotaFactory.Core().V1().ConfigMaps().Informer()
	c.quotaCMs = inf.GetIndexer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.queue.Add(keyQuota) },
		UpdateFunc: func(any, any) { c.queue.Add(keyQuota) },
		DeleteFunc: func(any) { c.queue.Add(keyQuota) },
	})
	return err
}

// readQuota reads the quota's YAML from its file or ConfigMap (from the
// informer's cache), and names the object an Event about it goes to.
func (c *Controller) readQuota() ([]byte, corev1.ObjectReference, error) {
	if c.cfg.QuotaConfigMap == "" {
		ref := corev1.ObjectReference{Kind: "Lease", APIVersion: "coordination.k8s.io/v1",
			Namespace: c.cfg.Namespace, Name: LeaseName}
		b, err := os.ReadFile(c.cfg.QuotaFile)
		if err != nil {
			return nil, ref, fmt.Errorf("quota file: %w", err)
		}
		return b, ref, nil
	}
	ns, name, _ := strings.Cut(c.cfg.QuotaConfigMap, "/")
	ref := corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: ns, Name: name}
	obj, ok, err := c.quotaCMs.GetByKey(c.cfg.QuotaConfigMap)
	if err != nil || !ok {
		return nil, ref, fmt.Errorf("quota ConfigMap %s is gone", c.cfg.QuotaConfigMap)
	}
	cm := obj.(*corev1.ConfigMap)
	ref.UID, ref.ResourceVersion = cm.UID, cm.ResourceVersion
	v, ok := cm.Data[QuotaKey]
	if !ok {
		return nil, ref, fmt.Errorf("quota ConfigMap %s has no key %s", c.cfg.QuotaConfigMap, QuotaKey)
	}
	return []byte(v), ref, nil
}

// syncQuota reads the quota again and, when it changed, applies it: on
// the leader as live edits (fleet's SetQueue, every changed cohort and
// queue, all or none), on a standby as the quota its next rebuild starts
// from. A file or ConfigMap that does not parse, a change of the tree's
// shape, or edits the scheduler refuses are logged and recorded as a
// Warning Event on the ConfigMap (the Lease for a file); the quota in
// force stays. Only the worker calls it.
func (c *Controller) syncQuota(ctx context.Context) {
	if c.cfg.QuotaFile == "" && c.cfg.QuotaConfigMap == "" {
		return
	}
	data, ref, err := c.readQuota()
	if err != nil {
		if c.quotaErr != err.Error() {
			c.refuseQuota(ctx, ref, err)
			c.quotaSum = [32]byte{}
		}
		return
	}
	sum := sha256.Sum256(data)
	if sum == c.quotaSum {
		return
	}
	c.quotaSum = sum
	kq, err := kueue.Parse(data, kueue.Options{})
	if err != nil {
		c.refuseQuota(ctx, ref, err)
		return
	}
	tr, err := NewTranslator(&c.cfg, kq)
	if err != nil {
		c.refuseQuota(ctx, ref, err)
		return
	}
	c.mu.Lock()
	live := c.s != nil && c.leader
	var edited []string
	if live {
		edited, err = c.applyQuota(kq.Spec)
	}
	queuesChanged := !maps.Equal(c.tr.queues, tr.queues) || !reflect.DeepEqual(c.tr.flavors, tr.flavors)
	var refused []string
	if err == nil {
		c.tr, c.quota = tr, kq.Spec
		// Workloads refused at submission (a queue that could not reach
		// their size) are judged again by the new quota.
		refused = slices.Collect(maps.Keys(c.bad))
	}
	c.mu.Unlock()
	if err != nil {
		c.refuseQuota(ctx, ref, err)
		return
	}
	c.quotaErr = ""
	if !live || len(edited) == 0 && !queuesChanged {
		return
	}
	msg := "quota applied"
	if len(edited) > 0 {
		msg += ": " + strings.Join(edited, ", ")
	}
	for _, key := range refused {
		c.queue.Add(keyWork + key)
	}
	if queuesChanged {
		msg += "; LocalQueues or ResourceFlavors changed"
		for _, key := range c.podInf.GetIndexer().ListIndexFuncValues(indexWorkload) {
			c.queue.Add(keyWork + key)
		}
		c.queue.Add(keyNodes)
	}
	c.log.Info(msg, "from", ref.Kind+" "+ref.Namespace+"/"+ref.Name)
	c.recordEvent(ref, corev1.EventTypeNormal, ReasonQuotaApplied, msg)
	c.queue.Add(keyCycle)
}

// refuseQuota logs a quota that is not applied and records it as a
// Warning Event.
func (c *Controller) refuseQuota(ctx context.Context, ref corev1.ObjectReference, err error) {
	msg := "quota not applied, the quota in force stays: " + err.Error()
	c.quotaErr = err.Error()
	c.log.Error(msg, "from", ref.Kind+" "+ref.Namespace+"/"+ref.Name)
	c.recordEvent(ref, corev1.EventTypeWarning, ReasonQuotaRefused, msg)
}

// applyQuota makes the scheduler's quota spec, by SetQueue on every
// cohort and queue that differs. The edits are tried in passes until
// none is left (an edit may be valid only after another: lowering one
// queue's guarantee before raising another's); when a pass applies none,
// those applied are undone and the first refusal is returned. c.mu is
// held.
func (c *Controller) applyQuota(spec quota.Spec) ([]string, error) {
	cur := c.s.Quota()
	if err := sameShape(cur, spec); err != nil {
		return nil, err
	}
	old := map[string]quota.NodeSpec{}
	for _, n := range cur.Nodes {
		old[n.Name] = n
	}
	var todo []quota.NodeSpec
	for _, n := range spec.Nodes {
		if !reflect.DeepEqual(old[n.Name], n) {
			todo = append(todo, n)
		}
	}
	now := c.clock.Now()
	var done []string
	for len(todo) > 0 {
		var left []quota.NodeSpec
		var first error
		for _, n := range todo {
			if err := c.s.SetQueue(now, n); err != nil {
				left = append(left, n)
				first = cmpErr(first, err)
				continue
			}
			done = append(done, n.Name)
		}
		if len(left) == len(todo) {
			for _, name := range slices.Backward(done) {
				if err := c.s.SetQueue(now, old[name]); err != nil {
					c.log.Error("undoing a quota edit", "node", name, "err", err)
				}
			}
			return nil, first
		}
		todo = left
	}
	return done, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// sameShape refuses a quota whose cohorts and queues, their parents and
// kinds, or whose flavors and resources differ from the one in force:
// those are not live edits, and a restart of the scheduler takes them.
func sameShape(cur, next quota.Spec) error {
	shape := func(s quota.Spec) []string {
		var out []string
		for _, n := range s.Nodes {
			out = append(out, fmt.Sprintf("%s %s under %q", n.Kind, n.Name, n.Parent))
		}
		slices.Sort(out)
		return out
	}
	a, b := shape(cur), shape(next)
	switch {
	case !slices.Equal(a, b):
		return fmt.Errorf("%w (cohorts or ClusterQueues added, removed or moved: %s): restart the scheduler to take it",
			errQuotaShape, diffShape(a, b))
	case !slices.Equal(cur.Flavors, next.Flavors) || !slices.Equal(cur.Resources, next.Resources):
		return fmt.Errorf("%w (flavors %v -> %v, resources %v -> %v): restart the scheduler to take it",
			errQuotaShape, cur.Flavors, next.Flavors, cur.Resources, next.Resources)
	}
	return nil
}

func diffShape(a, b []string) string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, "-"+x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, "+"+x)
		}
	}
	return strings.Join(out, ", ")
}

// recordEvent records an Event about any object. It does not wait for
// the write: the Event is queued for writeEvents, so that a drain's
// deletion or a binding never waits behind the status client's rate limit.
// When eventBuffer Events are queued already, the new one is dropped (and
// logged at debug level), as client-go's broadcaster drops under load.
func (c *Controller) recordEvent(ref corev1.ObjectReference, typ, reason, msg string) {
	now := metav1.NewTime(c.clock.Now())
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{GenerateName: strings.ToLower(ref.Name) + ".", Namespace: ref.Namespace},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             msg,
		Type:                typ,
		Source:              corev1.EventSource{Component: c.cfg.SchedulerName},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		ReportingController: "fleetsched.io/" + c.cfg.SchedulerName,
		ReportingInstance:   c.cfg.Identity,
		Action:              reason,
		EventTime:           metav1.NewMicroTime(now.Time.Truncate(time.Microsecond)),
	}
	select {
	case c.events <- ev:
	default:
		c.log.Debug("event dropped: too many queued", "object", ref.Name, "reason", reason)
	}
}

// eventBuffer is how many Events may wait for writeEvents.
const eventBuffer = 4096

// writeEvents writes the queued Events through the status client until
// ctx ends.
func (c *Controller) writeEvents(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-c.events:
			if _, err := c.statusClient.CoreV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
				c.log.Debug("event", "object", ev.InvolvedObject.Name, "err", err)
			}
		}
	}
}
