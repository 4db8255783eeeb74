package kube

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/importer/k8s"
	"github.com/fleetsched/fleet/importer/kueue"
	"github.com/fleetsched/fleet/topology"
)

// This file is the one seam between Kubernetes objects and fleet's values:
// Pods become gang.Workloads, Nodes a topology.Spec, and decisions become
// the pod fields and conditions written back. Its keys are the package
// doc's table.

// Labels and annotations read on pods: Kueue's, then fleet's own.
const (
	// LabelQueue names the pod's LocalQueue (Kueue's label).
	LabelQueue = "kueue.x-k8s.io/queue-name"
	// LabelPodGroup names the pod group the pod belongs to: its gang.
	LabelPodGroup = "kueue.x-k8s.io/pod-group-name"
	// AnnotationGroupTotal is the number of pods of the pod group.
	AnnotationGroupTotal = "kueue.x-k8s.io/pod-group-total-count"
	// AnnotationRequiredTopology is the node label of the level one
	// domain of which must hold every pod of the group.
	AnnotationRequiredTopology = "kueue.x-k8s.io/podset-required-topology"
	// AnnotationPreferredTopology is the node label of the level the
	// group would rather stay within.
	AnnotationPreferredTopology = "kueue.x-k8s.io/podset-preferred-topology"

	// AnnotationShape is inference, training or batch.
	AnnotationShape = "fleetsched.io/shape"
	// AnnotationPreemptible ("true") lets fleet drain the workload.
	AnnotationPreemptible = "fleetsched.io/preemptible"
	// AnnotationCheckpointInterval is how often it checkpoints (a Go
	// duration such as 10m).
	AnnotationCheckpointInterval = "fleetsched.io/checkpoint-interval"
	// AnnotationLastCheckpoint is the time of its last checkpoint
	// (RFC 3339), which the workload updates.
	AnnotationLastCheckpoint = "fleetsched.io/last-checkpoint"
	// AnnotationSurvivesNodeLoss ("true") keeps a gang running when a
	// node is lost: its pod gets a replacement node (hot-swap).
	AnnotationSurvivesNodeLoss = "fleetsched.io/survives-node-loss"
	// AnnotationGPUShare is the share of one GPU each pod takes, in
	// thousandths.
	AnnotationGPUShare = "fleetsched.io/gpu-share"
	// AnnotationMIG is the MIG profile each pod takes ("1g.10gb").
	AnnotationMIG = "fleetsched.io/mig-profile"
	// AnnotationMinCount is the fewest pods an elastic group runs with.
	AnnotationMinCount = "fleetsched.io/min-count"
	// AnnotationAdmitted is the time the scheduler admitted the pod's
	// workload (RFC 3339), written with the binding.
	AnnotationAdmitted = "fleetsched.io/admitted"
	// AnnotationDrain is written by the scheduler on a victim's pods just
	// before it deletes them: the drain's reason, start and beneficiaries,
	// which the pod's deletionTimestamp (the deadline) does not say.
	AnnotationDrain = "fleetsched.io/drain"
)

// PodSetName is the name of the one pod set of a workload made of pods.
const PodSetName = "pods"

// podGPUs is the resource a pod asks GPUs with.
const podGPUs = corev1.ResourceName(k8s.GPUResource)

// PodError is a pod (or pod group) that cannot run as written: the
// sentence says what is wrong and what to change, and becomes the pod's
// PodScheduled=False condition and an Event.
type PodError struct {
	Workload string // the workload key (namespace/group or namespace/pod)
	Field    string // the label, annotation or field at fault
	Message  string // what is wrong and what to change
}

// Error renders the workload, the field and the message.
func (e *PodError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Workload, e.Field, e.Message)
}

// DrainNote is the content of AnnotationDrain, in JSON.
type DrainNote struct {
	// Reason is the drain's gang.DrainReason, as text.
	Reason string `json:"reason"`
	// Since and Deadline bound the drain; the deadline is also the pods'
	// deletionTimestamp.
	Since    time.Time `json:"since"`
	Deadline time.Time `json:"deadline"`
	// Beneficiaries is every workload the victim drains for.
	Beneficiaries []string `json:"beneficiaries,omitempty"`
	// KillAsked is when the scheduler first asked to kill it (zero: not yet).
	KillAsked time.Time `json:"killAsked,omitzero"`
}

// Translator maps pods and nodes to fleet's values. It is immutable once
// built and safe for concurrent use.
type Translator struct {
	schedulerName string
	// queues maps "namespace/localqueue" to its ClusterQueue.
	queues map[string]string
	// levels maps a topology label to its level name in the fleet.
	levels map[string]string
	// classes maps a priorityClassName to a fleet priority class.
	classes map[string]string
	// shapes maps a fleet priority class to a default shape.
	shapes  map[string]gang.Shape
	nodes   k8s.Options
	flavors []kueue.Flavor
}

// NewTranslator builds the seam from the configuration and the Kueue
// objects read from the quota file.
func NewTranslator(cfg *Config, kq *kueue.Result) (*Translator, error) {
	opts, err := k8s.Preset(cfg.Preset, nil)
	if err != nil {
		return nil, fmt.Errorf("kube: topology preset %q: %w", cfg.Preset, err)
	}
	t := &Translator{
		schedulerName: cfg.SchedulerName,
		queues:        map[string]string{},
		levels:        map[string]string{corev1.LabelHostname: "node"},
		classes:       maps.Clone(cfg.PriorityClasses),
		shapes:        map[string]gang.Shape{},
		nodes:         opts,
	}
	for _, l := range opts.Levels {
		t.levels[l.Label] = l.Name
	}
	for class, name := range cfg.Shapes {
		var s gang.Shape
		if err := s.UnmarshalText([]byte(name)); err != nil {
			return nil, fmt.Errorf("kube: shape of class %q: %w", class, err)
		}
		t.shapes[class] = s
	}
	if kq != nil {
		for _, lq := range kq.LocalQueues {
			t.queues[lq.Namespace+"/"+lq.Name] = lq.ClusterQueue
		}
		t.flavors = kq.Flavors
	}
	return t, nil
}

// Ours reports whether fleet schedules the pod.
func (t *Translator) Ours(p *corev1.Pod) bool { return p.Spec.SchedulerName == t.schedulerName }

// WorkloadKey is the workload a pod belongs to: namespace/group for a
// Kueue pod group, namespace/name for a pod alone. It is also the
// workload's ID in the scheduler.
func WorkloadKey(p *corev1.Pod) string {
	if g := p.Labels[LabelPodGroup]; g != "" {
		return p.Namespace + "/" + g
	}
	return p.Namespace + "/" + p.Name
}

// Terminal reports whether the pod's containers have ended for good.
func Terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Workload turns the live pods of one workload key into a gang.Workload,
// its pods in index order (by name). ready is false while a pod group
// has fewer pods than its total count: the pods wait, with the sentence
// in the error. A *PodError says what is wrong with the pods.
func (t *Translator) Workload(key string, pods []*corev1.Pod) (w gang.Workload, ordered []*corev1.Pod, err error) {
	ordered = slices.Clone(pods)
	slices.SortFunc(ordered, func(a, b *corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	if len(ordered) == 0 {
		return w, nil, &PodError{Workload: key, Field: "pods", Message: "no pods"}
	}
	first := ordered[0]
	bad := func(field, format string, args ...any) error {
		return &PodError{Workload: key, Field: field, Message: fmt.Sprintf(format, args...)}
	}
	w.ID = key
	lq := first.Labels[LabelQueue]
	if lq == "" {
		return w, ordered, bad(LabelQueue, "no queue: label the pod %s=<LocalQueue of namespace %s>", LabelQueue, first.Namespace)
	}
	cq, ok := t.queues[first.Namespace+"/"+lq]
	if !ok {
		return w, ordered, bad(LabelQueue, "LocalQueue %q is not defined in namespace %s: name one of %s",
			lq, first.Namespace, t.queueList(first.Namespace))
	}
	w.Queue = cq
	if pc := first.Spec.PriorityClassName; pc != "" {
		class, ok := t.classes[pc]
		if !ok {
			class = pc
		}
		w.PriorityClass = class
		w.Shape = t.shapes[class]
	} else if first.Spec.Priority != nil {
		w.Priority = *first.Spec.Priority
	}
	if v := first.Annotations[AnnotationShape]; v != "" {
		if err := w.Shape.UnmarshalText([]byte(v)); err != nil {
			return w, ordered, bad(AnnotationShape, "%q is not a shape: write inference, training or batch", v)
		}
	}
	if w.Shape == 0 {
		w.Shape = gang.Batch
		if len(ordered) > 1 || first.Annotations[AnnotationGroupTotal] != "" {
			w.Shape = gang.Training
		}
	}

	ps := gang.PodSet{Name: PodSetName, Count: len(ordered)}
	if first.Labels[LabelPodGroup] != "" {
		v := first.Annotations[AnnotationGroupTotal]
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return w, ordered, bad(AnnotationGroupTotal, "%q is not a pod count: write the number of pods of group %s",
				v, first.Labels[LabelPodGroup])
		}
		ps.Count = n
	}
	gpus, err := t.podGPUs(key, first)
	if err != nil {
		return w, ordered, err
	}
	ps.GPUsPerPod = gpus
	for _, p := range ordered[1:] {
		g, err := t.podGPUs(key, p)
		if err != nil {
			return w, ordered, err
		}
		if g != gpus {
			return w, ordered, bad("resources", "pod %s asks %d GPUs and pod %s %d: every pod of a group asks the same",
				first.Name, gpus, p.Name, g)
		}
	}
	if v := first.Annotations[AnnotationGPUShare]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 1000 || gpus > 0 {
			return w, ordered, bad(AnnotationGPUShare, "%q is not a share: write thousandths of one GPU, 1 to 1000, "+
				"and ask no %s", v, podGPUs)
		}
		ps.GPUShare = n
	}
	if v := first.Annotations[AnnotationMIG]; v != "" {
		ps.MIG = v
	}
	if v := first.Annotations[AnnotationMinCount]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > ps.Count {
			return w, ordered, bad(AnnotationMinCount, "%q is not a count: write 1 to %d", v, ps.Count)
		}
		if n < ps.Count {
			// An elastic group starts smaller, grows and gives up pods
			// one by one: this host binds whole groups and deletes whole
			// groups only, so it would leave pods waiting for a start or
			// an exit that never comes.
			return w, ordered, bad(AnnotationMinCount, "%d of %d pods: this scheduler runs groups at their full size only; "+
				"remove the annotation or set it to %d", n, ps.Count, ps.Count)
		}
		ps.MinCount = n
	}
	w.PodSets = []gang.PodSet{ps}

	for _, a := range []struct {
		key  string
		into *string
	}{{AnnotationRequiredTopology, &w.Topology.Required}, {AnnotationPreferredTopology, &w.Topology.Preferred}} {
		if v := first.Annotations[a.key]; v != "" {
			level, ok := t.levels[v]
			if !ok {
				return w, ordered, bad(a.key, "%q is not a topology label: write one of %s", v, t.levelList())
			}
			*a.into = level
		}
	}

	if v := first.Annotations[AnnotationPreemptible]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return w, ordered, bad(AnnotationPreemptible, "%q is not true or false", v)
		}
		w.Drain.Preemptible = b
	}
	if v := first.Annotations[AnnotationSurvivesNodeLoss]; v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return w, ordered, bad(AnnotationSurvivesNodeLoss, "%q is not true or false", v)
		}
		w.Drain.SurvivesNodeLoss = b
	}
	if v := first.Annotations[AnnotationCheckpointInterval]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return w, ordered, bad(AnnotationCheckpointInterval, "%q is not a duration: write one such as 10m", v)
		}
		w.Drain.CheckpointInterval = d
	}
	last, err := LastCheckpoint(ordered)
	if err != nil {
		return w, ordered, bad(AnnotationLastCheckpoint, "%v", err)
	}
	w.Drain.LastCheckpoint = last
	if err := w.Validate(); err != nil {
		return w, ordered, bad("spec", "%v", err)
	}
	return w, ordered, nil
}

// Complete reports whether a group has every pod its total count says;
// the error explains the wait when it has not.
func Complete(w gang.Workload, pods []*corev1.Pod) error {
	if n := w.PodSets[0].Count; len(pods) < n {
		return &PodError{Workload: w.ID, Field: AnnotationGroupTotal, Message: fmt.Sprintf(
			"pod group has fewer pods than its %d; it waits for the rest (create them, or lower %s)",
			n, AnnotationGroupTotal)}
	}
	if n := w.PodSets[0].Count; len(pods) > n {
		return &PodError{Workload: w.ID, Field: AnnotationGroupTotal, Message: fmt.Sprintf(
			"pod group has %d pods but %s says %d: delete the extra pods or raise the count",
			len(pods), AnnotationGroupTotal, n)}
	}
	return nil
}

// LastCheckpoint is the latest AnnotationLastCheckpoint over the pods
// (RFC 3339), zero when none has one.
func LastCheckpoint(pods []*corev1.Pod) (time.Time, error) {
	var last time.Time
	for _, p := range pods {
		v := p.Annotations[AnnotationLastCheckpoint]
		if v == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q on pod %s is not an RFC 3339 time such as 2026-01-02T15:04:05Z", v, p.Name)
		}
		if at.After(last) {
			last = at
		}
	}
	return last, nil
}

func (t *Translator) podGPUs(key string, p *corev1.Pod) (int, error) {
	total := int64(0)
	for _, c := range p.Spec.Containers {
		q, ok := c.Resources.Limits[podGPUs]
		if !ok {
			q, ok = c.Resources.Requests[podGPUs]
		}
		if ok {
			total += q.Value()
		}
	}
	// An init container's GPUs are held before the others start, not
	// beside them: the pod needs the larger of the two.
	for _, c := range p.Spec.InitContainers {
		if q, ok := c.Resources.Limits[podGPUs]; ok && q.Value() > total {
			total = q.Value()
		}
	}
	if total > 1<<16 {
		return 0, &PodError{Workload: key, Field: "resources", Message: fmt.Sprintf("pod %s asks %d GPUs", p.Name, total)}
	}
	return int(total), nil
}

func (t *Translator) queueList(ns string) string {
	var names []string
	for k := range t.queues {
		if n, ok := strings.CutPrefix(k, ns+"/"); ok {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "(none: define a LocalQueue for this namespace in the quota file)"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func (t *Translator) levelList() string {
	keys := slices.Sorted(maps.Keys(t.levels))
	return strings.Join(keys, ", ")
}

// Nodes builds the fleet from the cluster's nodes. used holds, per node,
// the GPUs taken by pods fleet does not schedule: they are left out of
// the node's GPUs, so fleet never places work on them nor evicts those
// pods. A node whose labels match a Kueue ResourceFlavor's nodeLabels
// takes that flavor's name as its GPU model.
func (t *Translator) Nodes(nodes []*corev1.Node, used map[string]int) (*k8s.Result, error) {
	in := make([]k8s.Node, 0, len(nodes))
	sorted := slices.Clone(nodes)
	slices.SortFunc(sorted, func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	for _, n := range sorted {
		kn := k8s.Node{Name: n.Name, Labels: n.Labels}
		q, ok := n.Status.Allocatable[podGPUs]
		if !ok {
			q = n.Status.Capacity[podGPUs]
		}
		kn.GPUs = int(q.Value()) - used[n.Name]
		if kn.GPUs <= 0 {
			continue
		}
		if name := t.flavorOf(n.Labels); name != "" {
			kn.Labels = maps.Clone(n.Labels)
			kn.Labels[k8s.GKEAcceleratorLabel] = name
			kn.Labels[k8s.ProductLabel] = name
		}
		in = append(in, kn)
	}
	return k8s.Import(in, t.nodes)
}

func (t *Translator) flavorOf(labels map[string]string) string {
	for _, f := range t.flavors {
		if len(f.NodeLabels) == 0 {
			continue
		}
		match := true
		for k, v := range f.NodeLabels {
			if labels[k] != v {
				match = false
				break
			}
		}
		if match {
			return f.Name
		}
	}
	return ""
}

// Health is a node's health as fleet sees it: Down when its Ready
// condition is False or Unknown, Cordoned when spec.unschedulable.
func Health(n *corev1.Node) topology.Health {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return topology.Down
		}
	}
	if n.Spec.Unschedulable {
		return topology.Cordoned
	}
	return topology.Healthy
}

// ForeignGPUs is what a pod fleet does not schedule takes of its node.
func ForeignGPUs(p *corev1.Pod) int {
	var total resource.Quantity
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Limits[podGPUs]; ok {
			total.Add(q)
		}
	}
	return int(total.Value())
}

// EncodeDrain and DecodeDrain read and write AnnotationDrain.
func EncodeDrain(n DrainNote) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// DecodeDrain reads AnnotationDrain; ok is false when it is absent or
// unreadable.
func DecodeDrain(v string) (n DrainNote, ok bool) {
	if v == "" {
		return n, false
	}
	if err := json.Unmarshal([]byte(v), &n); err != nil {
		return n, false
	}
	return n, true
}
