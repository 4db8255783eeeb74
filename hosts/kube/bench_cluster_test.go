package kube

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// benchQPS and benchBurst are the client limits both schedulers get.
const benchQPS, benchBurst = 200, 400

// bindClock records, per pod, when its creation returned, when a watcher
// first saw it bound, and when it first saw it answered with a
// PodScheduled=False condition.
type bindClock struct {
	mu       sync.Mutex
	created  map[string]time.Time
	bound    map[string]time.Time
	nodes    map[string]string
	answered map[string]time.Time
}

func watchBindings(ctx context.Context, t testing.TB, client kubernetes.Interface) *bindClock {
	bc := &bindClock{created: map[string]time.Time{}, bound: map[string]time.Time{}, nodes: map[string]string{},
		answered: map[string]time.Time{}}
	f := informers.NewSharedInformerFactory(client, 0)
	inf := f.Core().V1().Pods().Informer()
	seen := func(o any) {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return
		}
		if p.Spec.NodeName == "" {
			if _, ok := scheduledFalse(p); ok {
				bc.mu.Lock()
				if _, ok := bc.answered[p.Name]; !ok {
					bc.answered[p.Name] = time.Now()
				}
				bc.mu.Unlock()
			}
			return
		}
		bc.mu.Lock()
		if _, ok := bc.bound[p.Name]; !ok {
			bc.bound[p.Name] = time.Now()
			bc.nodes[p.Name] = p.Spec.NodeName
		}
		bc.mu.Unlock()
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, o any) { seen(o) }})
	require.NoError(t, err)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return bc
}

// benchPods creates the pods from 16 goroutines, recording each creation.
// Pods for kube-scheduler name its default profile and, in a gang, the
// PodGroup of the gang (spec.schedulingGroup).
func benchPods(t testing.TB, client kubernetes.Interface, bc *bindClock, schedulerName string, gangs, size, gpus int) {
	ctx := context.Background()
	var wg sync.WaitGroup
	work := make(chan *corev1.Pod)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				_, err := client.CoreV1().Pods("team").Create(ctx, p, metav1.CreateOptions{})
				if err != nil {
					t.Errorf("create %s: %v", p.Name, err)
					continue
				}
				bc.mu.Lock()
				bc.created[p.Name] = time.Now()
				bc.mu.Unlock()
			}
		}()
	}
	for g := range gangs {
		for i := range size {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b-%04d-%d", g, i), Namespace: "team",
					Labels: map[string]string{LabelQueue: "inference"}, Annotations: map[string]string{}},
				Spec: corev1.PodSpec{SchedulerName: schedulerName, PriorityClassName: "prod-inference",
					Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/x", Resources: corev1.ResourceRequirements{
						Limits: corev1.ResourceList{podGPUs: *resource.NewQuantity(int64(gpus), resource.DecimalSI)}}}}},
			}
			if size > 1 {
				p.Labels[LabelPodGroup] = fmt.Sprintf("b-%04d", g)
				p.Annotations[AnnotationGroupTotal] = fmt.Sprint(size)
				if schedulerName == kubeSchedulerName {
					p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr(fmt.Sprintf("b-%04d", g))}
				}
			}
			work <- p
		}
	}
	close(work)
	wg.Wait()
}

// kubeSchedulerName is the schedulerName of kube-scheduler's default
// profile.
const kubeSchedulerName = "default-scheduler"

func ptr[T any](v T) *T { return &v }

// podGroups creates kube-scheduler's PodGroup of each gang: all or
// nothing, every pod (minCount = size), at the pods' priority class.
func podGroups(t testing.TB, client kubernetes.Interface, gangs, size int) {
	for g := range gangs {
		_, err := client.SchedulingV1beta1().PodGroups("team").Create(context.Background(), &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b-%04d", g), Namespace: "team"},
			// The group's priority must be its pods'.
			Spec: schedulingv1beta1.PodGroupSpec{PriorityClassName: "prod-inference",
				SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
					Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(size)}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// BenchmarkClusterBind measures fleet-scheduler and kube-scheduler side by
// side through a real API server (the same flags for both, with the
// GenericWorkload gate and scheduling.k8s.io/v1beta1 on) on 256 nodes of
// 8 GPUs, each scheduler with the client QPS and burst of fleet's default
// configuration: (a) 2,000 one-GPU pods, (b) 64 gangs of 8 pods of 8 GPUs,
// of which the 2,048 GPUs hold 32. fleet reads a gang from Kueue's pod
// group label; kube-scheduler from a PodGroup (gang policy, minCount 8)
// that each pod names, created before the timer starts. The pods are
// inference's, whose queue reaches the whole fleet by borrowing. It
// reports pods bound per second from the first creation to the last
// binding, the p50 and p99 of creation-to-binding, the pods bound, and
// part-bound-gangs: the gangs a watcher sees part bound once the binding
// stops (fleet must leave none). Starting the cluster, the nodes and the
// scheduler is not timed.
func BenchmarkClusterBind(b *testing.B) {
	for _, shape := range []struct {
		name              string
		gangs, size, gpus int
	}{{"pods-2000x1gpu", 2000, 1, 1}, {"gangs-64x8x8gpu", 64, 8, 8}} {
		for _, who := range []string{"fleet", "kube-scheduler"} {
			b.Run(shape.name+"/"+who, func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					cl := startCluster(b, genericWorkload...)
					cl.addNodes(b, 256)
					ctx, cancel := context.WithCancel(context.Background())
					bc := watchBindings(ctx, b, cl.client)
					name := "fleet"
					if who == "fleet" {
						clock := &testClock{}
						cfg := testConfig("bench")
						require.Equal(b, []any{float32(benchQPS), benchBurst}, []any{cfg.QPS, cfg.Burst})
						s := startScheduler(b, cl, clock, "bench", nil)
						eventually(b, 20*time.Second, "fleet leads", s.c.Leading)
					} else {
						name = kubeSchedulerName
						startKubeScheduler(b, cl, benchQPS, benchBurst, "GenericWorkload=true")
						if shape.size > 1 {
							podGroups(b, cl.client, shape.gangs, shape.size)
						}
					}
					rc := rest.CopyConfig(cl.cfg)
					rc.QPS, rc.Burst = 2000, 4000
					creator, err := kubernetes.NewForConfig(rc)
					require.NoError(b, err)
					// What the 2,048 GPUs hold: (b) asks twice that, so half the
					// gangs wait.
					total := min(shape.gangs*shape.size, 256*8/shape.gpus)
					b.StartTimer()
					benchPods(b, creator, bc, name, shape.gangs, shape.size, shape.gpus)
					deadline := time.Now().Add(2 * time.Minute)
					for {
						bc.mu.Lock()
						n := len(bc.bound)
						bc.mu.Unlock()
						if n >= total || time.Now().After(deadline) {
							break
						}
						time.Sleep(20 * time.Millisecond)
					}
					b.StopTimer()
					if shape.size > 1 {
						// Bindings still on their way land before the gangs are
						// counted.
						time.Sleep(time.Second)
					}
					bc.mu.Lock()
					first, last, lat := latencies(bc.created, bc.bound)
					bound := len(bc.bound)
					perGang := map[string]int{}
					for p := range bc.bound {
						perGang[p[:len("b-0000")]]++
					}
					bc.mu.Unlock()
					cancel()
					partial := 0
					for _, n := range perGang {
						if n < shape.size {
							partial++
						}
					}
					b.Logf("%s: %d of %d pods bound, %d gangs part bound", who, bound, shape.gangs*shape.size, partial)
					if who == "fleet" {
						require.Equal(b, total, bound, "pods bound within 2 minutes")
						require.Zero(b, partial, "gangs part bound")
					}
					require.NotZero(b, bound, "%s bound no pod", who)
					b.ReportMetric(float64(bound)/last.Sub(first).Seconds(), "pods/s")
					b.ReportMetric(quantileMs(lat, 0.5), "p50-ms")
					b.ReportMetric(quantileMs(lat, 0.99), "p99-ms")
					b.ReportMetric(float64(bound), "bound")
					b.ReportMetric(float64(partial), "part-bound-gangs")
				}
			})
		}
	}
}
