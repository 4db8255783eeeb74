package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/fleetsched/fleet/hosts/host"
)

// podRef names a pod by its workload key (namespace/...) and name.
type podRef struct {
	workload string
	name     string
}

func (r podRef) namespace() string {
	ns, _, _ := strings.Cut(r.workload, "/")
	return ns
}

// action is one API write the worker carries out after a decision,
// without holding the scheduler.
type action struct {
	pod  podRef
	kind string // bind, delete, drain, nominate, condition
	node string
	// grace is the deletion's grace period in seconds (delete, drain).
	grace   int64
	note    DrainNote
	reason  string
	message string
}

func bind(p podRef, node string, at time.Time) action {
	return action{pod: p, kind: "bind", node: node, note: DrainNote{Since: at}}
}

func deletePod(p podRef, grace int64, reason, msg string) action {
	return action{pod: p, kind: "delete", grace: grace, reason: reason, message: msg}
}

func drainPod(p podRef, note DrainNote, grace int64, msg string) action {
	return action{pod: p, kind: "drain", note: note, grace: grace, reason: "Preempted", message: msg}
}

func annotate(p podRef, note DrainNote) action { return action{pod: p, kind: "annotate", note: note} }

func nominate(p podRef, node string) action { return action{pod: p, kind: "nominate", node: node} }

func condition(p podRef, msg, reason string) action {
	return action{pod: p, kind: "condition", message: msg, reason: reason}
}

// statusWriters is how many PodScheduled=False conditions (and their
// Events) are written at a time, beside the Config.Binders of the worker.
const statusWriters = 8

// statusLane writes the conditions of pods that wait or are refused off
// the worker, latest message per pod, and only while no decision is being
// carried out: a flood of bad pods delays their own answers, not the
// bindings of the good ones.
type statusLane struct {
	queue   workqueue.TypedInterface[string]
	mu      sync.Mutex
	pending map[string]action // by namespace/name
	// deciding counts the passes of decisions (bindings, deletions) in
	// flight; idle is signalled when it drops to 0.
	deciding int
	idle     *sync.Cond
}

func newStatusLane() *statusLane {
	l := &statusLane{queue: workqueue.NewTyped[string](), pending: map[string]action{}}
	l.idle = sync.NewCond(&l.mu)
	return l
}

// decide marks a pass of decisions until the returned func is called.
func (l *statusLane) decide() func() {
	l.mu.Lock()
	l.deciding++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		l.deciding--
		if l.deciding == 0 {
			l.idle.Broadcast()
		}
		l.mu.Unlock()
	}
}

func (l *statusLane) add(a action) {
	key := a.pod.namespace() + "/" + a.pod.name
	l.mu.Lock()
	l.pending[key] = a
	l.mu.Unlock()
	l.queue.Add(key)
}

// writeStatus runs statusWriters writers of the lane until ctx ends. A
// condition the pod carries already, or a pod gone or bound meanwhile, is
// not written.
func (c *Controller) writeStatus(ctx context.Context) {
	go func() {
		<-ctx.Done()
		c.status.queue.ShutDown()
	}()
	for range statusWriters {
		go func() {
			for {
				key, quit := c.status.queue.Get()
				if quit {
					return
				}
				c.status.mu.Lock()
				for c.status.deciding > 0 {
					c.status.idle.Wait()
				}
				a, ok := c.status.pending[key]
				delete(c.status.pending, key)
				c.status.mu.Unlock()
				if ok && c.stillWaits(a) {
					if err := c.write(ctx, a); err != nil && ctx.Err() == nil {
						c.log.Warn("api write", "kind", a.kind, "pod", a.pod.workload+"/"+a.pod.name, "err", err)
					}
				}
				c.status.queue.Done(key)
			}
		}()
	}
}

// stillWaits reports whether a condition is still to be written: the pod
// is there, unbound, and says something else.
func (c *Controller) stillWaits(a action) bool {
	p, err := c.pods.Pods(a.pod.namespace()).Get(a.pod.name)
	if err != nil || p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
		return false
	}
	msg, ok := scheduledFalse(p)
	return !ok || msg != a.message
}

// carryOut runs the actions, Config.Binders at a time, and hands the
// conditions to the status lane once it runs. Bindings of one gang are all
// issued in the same pass; a failed write is logged and given an Event,
// and the next sync of the workload sees the pods as they are.
func (c *Controller) carryOut(ctx context.Context, acts []action) {
	if c.statusRuns.Load() {
		acts = slices.DeleteFunc(acts, func(a action) bool {
			if a.kind == "condition" {
				c.status.add(a)
				return true
			}
			return false
		})
	}
	if len(acts) == 0 {
		return
	}
	defer c.status.decide()()
	host.ForEach(c.cfg.Binders, len(acts), func(i int) {
		a := acts[i]
		if err := c.write(ctx, a); err != nil && ctx.Err() == nil {
			c.log.Warn("api write", "kind", a.kind, "pod", a.pod.workload+"/"+a.pod.name, "err", err)
		}
	})
}

func (c *Controller) write(ctx context.Context, a action) error {
	ns := a.pod.namespace()
	pods := c.client.CoreV1().Pods(ns)
	switch a.kind {
	case "bind":
		// The binding's annotations are copied onto the pod: the
		// admission time survives a restart.
		err := pods.Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: a.pod.name, Namespace: ns, Annotations: map[string]string{
				AnnotationAdmitted: a.note.Since.UTC().Format(time.RFC3339Nano)}},
			Target: corev1.ObjectReference{Kind: "Node", Name: a.node},
		}, metav1.CreateOptions{})
		if err != nil && !isGone(err) {
			c.event(a.pod, corev1.EventTypeWarning, "FailedBinding", fmt.Sprintf("binding to %s: %v", a.node, err))
		}
		return err
	case "annotate":
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"annotations": map[string]string{AnnotationDrain: EncodeDrain(a.note)}}})
		_, err := pods.Patch(ctx, a.pod.name, types.MergePatchType, patch, metav1.PatchOptions{})
		if isGone(err) {
			return nil
		}
		return err
	case "drain":
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"annotations": map[string]string{AnnotationDrain: EncodeDrain(a.note)}}})
		if _, err := pods.Patch(ctx, a.pod.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			if isGone(err) {
				return nil
			}
			return err
		}
		c.event(a.pod, corev1.EventTypeNormal, a.reason, a.message)
		return c.delete(ctx, a.pod, a.grace)
	case "delete":
		c.event(a.pod, corev1.EventTypeNormal, a.reason, a.message)
		return c.delete(ctx, a.pod, a.grace)
	case "nominate":
		var v any = a.node
		if a.node == "" {
			v = nil
		}
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{"nominatedNodeName": v}})
		_, err := pods.Patch(ctx, a.pod.name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		if isGone(err) {
			return nil
		}
		return err
	case "condition":
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{
			"type": corev1.PodScheduled, "status": corev1.ConditionFalse, "reason": corev1.PodReasonUnschedulable,
			"message": a.message, "lastTransitionTime": metav1.NewTime(c.clock.Now()),
		}}}})
		_, err := c.statusClient.CoreV1().Pods(ns).Patch(ctx, a.pod.name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if isGone(err) {
			return nil
		}
		if err != nil {
			return err
		}
		c.event(a.pod, corev1.EventTypeWarning, a.reason, a.message)
		return nil
	}
	return fmt.Errorf("kube: unknown action %q", a.kind)
}

func (c *Controller) delete(ctx context.Context, p podRef, grace int64) error {
	err := c.client.CoreV1().Pods(p.namespace()).Delete(ctx, p.name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if isGone(err) {
		return nil
	}
	return err
}

// event records an Event on the pod, as kube-scheduler does.
func (c *Controller) event(p podRef, typ, reason, msg string) {
	c.recordEvent(corev1.ObjectReference{Kind: "Pod", Namespace: p.namespace(), Name: p.name, APIVersion: "v1"}, typ, reason, msg)
}
