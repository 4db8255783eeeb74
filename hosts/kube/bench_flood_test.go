package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// badPod is the i-th pod of a flood, cycling through three refusals: an
// unknown LocalQueue, a malformed annotation, more GPUs than any node.
// schedulerName "fleet" makes them fleet's to refuse; another name makes
// them a load on the API server alone.
func badPod(i int, schedulerName string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bad-%05d", i), Namespace: "team",
			Labels: map[string]string{LabelQueue: "batch"}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{SchedulerName: schedulerName, PriorityClassName: "preemptible-batch",
			Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/x"}}},
	}
	gpus := int64(1)
	switch i % 3 {
	case 0:
		p.Labels[LabelQueue] = "nope"
	case 1:
		p.Annotations[AnnotationCheckpointInterval] = "often"
	case 2:
		gpus = 16
	}
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{podGPUs: *resource.NewQuantity(gpus, resource.DecimalSI)}
	return p
}

// flood creates bad pods at rate per second from 16 goroutines until stop
// is closed, recording each creation.
func flood(t testing.TB, client kubernetes.Interface, rate int, schedulerName string, stop <-chan struct{}) (
	created map[string]time.Time, wait func()) {
	created = map[string]time.Time{}
	var mu sync.Mutex
	work := make(chan int, 64)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				_, err := client.CoreV1().Pods("team").Create(context.Background(), badPod(i, schedulerName), metav1.CreateOptions{})
				if err != nil {
					t.Errorf("create bad pod %d: %v", i, err)
					continue
				}
				mu.Lock()
				created[fmt.Sprintf("bad-%05d", i)] = time.Now()
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(work)
		start := time.Now()
		for i := 0; ; i++ {
			next := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
			select {
			case <-stop:
				return
			case <-time.After(time.Until(next)):
			}
			select {
			case <-stop:
				return
			case work <- i:
			}
		}
	}()
	return created, func() { wg.Wait(); mu.Lock(); mu.Unlock() }
}

// latencies is, of the pods created (by name, when), the first creation,
// the last binding, and each bound pod's creation-to-binding time.
func latencies(created, bound map[string]time.Time) (first, last time.Time, lat []time.Duration) {
	for p, c := range created {
		if first.IsZero() || c.Before(first) {
			first = c
		}
		if at, ok := bound[p]; ok {
			lat = append(lat, max(at.Sub(c), 0))
			if at.After(last) {
				last = at
			}
		}
	}
	return first, last, lat
}

// quantileMs is the f quantile of lat in milliseconds (0 without any).
func quantileMs(lat []time.Duration, f float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return lat[int(f*float64(len(lat)-1))].Seconds() * 1000
}

// BenchmarkClusterBadPodFlood measures whether a flood of bad pods slows
// the good ones: fleet-scheduler on 256 nodes of 8 GPUs through a real API
// server, bad pods created at a steady rate (a third each with an unknown
// LocalQueue, a malformed annotation, 16 GPUs), from 3 seconds before
// 1,000 good one-GPU pods are created until the last of them is bound. The
// timer covers the good pods alone. It reports the good pods bound per
// second and their creation-to-binding p50 and p99; the bad pods created
// and answered (a PodScheduled=False condition seen) per second over the
// same window, the p99 of creation-to-answer of those created in it, and
// the bad pods answered per second over the whole flood (from its first
// pod to its last answer, a second after it stops). ignored-per-s floods pods
// of another schedulerName: the API server's load alone.
func BenchmarkClusterBadPodFlood(b *testing.B) {
	const good = 1000
	for _, run := range []struct {
		name      string
		rate      int
		scheduler string
	}{
		{"bad-per-s=0", 0, "fleet"},
		{"ignored-per-s=100", 100, "nobody"},
		{"bad-per-s=100", 100, "fleet"},
		{"ignored-per-s=300", 300, "nobody"},
		{"bad-per-s=300", 300, "fleet"},
	} {
		b.Run(run.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				cl := startCluster(b)
				cl.addNodes(b, 256)
				ctx, cancel := context.WithCancel(context.Background())
				bc := watchBindings(ctx, b, cl.client)
				s := startScheduler(b, cl, &testClock{}, "bench", nil)
				eventually(b, 20*time.Second, "fleet leads", s.c.Leading)
				rc := rest.CopyConfig(cl.cfg)
				rc.QPS, rc.Burst = 2000, 4000
				creator, err := kubernetes.NewForConfig(rc)
				require.NoError(b, err)
				stop := make(chan struct{})
				stopFlood := sync.OnceFunc(func() { close(stop) })
				var bad map[string]time.Time
				waitFlood := func() {}
				if run.rate > 0 {
					bad, waitFlood = flood(b, creator, run.rate, run.scheduler, stop)
					// A failed run stops the flood before the cluster.
					b.Cleanup(func() { stopFlood(); waitFlood() })
					time.Sleep(3 * time.Second)
				}
				b.StartTimer()
				benchPods(b, creator, bc, "fleet", good, 1, 1)
				eventually(b, 2*time.Minute, "the good pods bound", func() bool {
					bc.mu.Lock()
					defer bc.mu.Unlock()
					n := 0
					for p := range bc.bound {
						if strings.HasPrefix(p, "b-") {
							n++
						}
					}
					return n == good
				})
				b.StopTimer()
				stopFlood()
				waitFlood()
				// Answers to the last bad pods land before they are counted.
				time.Sleep(time.Second)
				bc.mu.Lock()
				first, last, lat := latencies(bc.created, bc.bound)
				window := last.Sub(first)
				inWindow := func(at time.Time) bool { return !at.Before(first) && !at.After(last) }
				made, answered := 0, 0
				var answer []time.Duration
				for p, c := range bad {
					if inWindow(c) {
						made++
					}
					if at, ok := bc.answered[p]; ok {
						if inWindow(at) {
							answered++
						}
						if inWindow(c) {
							answer = append(answer, max(at.Sub(c), 0))
						}
					}
				}
				// Over the whole flood, from its first pod to its last answer.
				unanswered, all := 0, 0
				var floodFirst, floodLast time.Time
				for p, c := range bad {
					if floodFirst.IsZero() || c.Before(floodFirst) {
						floodFirst = c
					}
					at, ok := bc.answered[p]
					if !ok {
						if run.scheduler == "fleet" {
							unanswered++
						}
						continue
					}
					all++
					if at.After(floodLast) {
						floodLast = at
					}
				}
				bc.mu.Unlock()
				cancel()
				b.Logf("%d good pods bound in %s; %d bad pods made, %d answered in that window; "+
					"%d of %d unanswered a second after the flood stopped",
					good, window.Round(time.Millisecond), made, answered, unanswered, len(bad))
				b.ReportMetric(float64(good)/window.Seconds(), "good-pods/s")
				b.ReportMetric(quantileMs(lat, 0.5), "good-p50-ms")
				b.ReportMetric(quantileMs(lat, 0.99), "good-p99-ms")
				b.ReportMetric(float64(made)/window.Seconds(), "bad-made/s")
				b.ReportMetric(float64(answered)/window.Seconds(), "bad-answered/s")
				b.ReportMetric(quantileMs(answer, 0.99), "bad-answer-p99-ms")
				if all > 0 {
					b.ReportMetric(float64(all)/floodLast.Sub(floodFirst).Seconds(), "bad-answered-flood/s")
				}
			}
		})
	}
}
