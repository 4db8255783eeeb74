package kube

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetsched/fleet"
)

// runningGPUs is the GPUs the scheduler counts a workload holding (0: it
// does not run).
func runningGPUs(s *scheduler, id string) int {
	gpus := 0
	s.c.Scheduler(func(sc *fleet.Scheduler) {
		for _, r := range sc.Snapshot().Running {
			if r.ID == id {
				gpus = r.GPUs
			}
		}
	})
	return gpus
}

// TestClusterGangBindingFailsHalfWay: the binding pass of an admitted gang
// of 4 pods of 8 GPUs meets (a) one pod deleted between the admission and
// its binding: the other three stay bound where admitted, the gang keeps
// its 32 GPUs and the missing pod's node, nothing else is placed there,
// and the pod its owner creates again is bound to that node; (b) one node
// deleted from the cluster between the admission and the bindings (the API
// server binds to it all the same): the gang ends, all or nothing, its
// pods on the nodes still there are deleted too and its GPUs are free.
// The cluster has 257 nodes, so that the fleet without one still holds
// the reference quotas.
func TestClusterGangBindingFailsHalfWay(t *testing.T) {
	cl := startCluster(t)
	cl.addNodes(t, 257)
	clock := &testClock{}
	ctx := t.Context()
	startKubelet(t, ctx, cl, clock)

	var mu sync.Mutex
	admitted := map[string][]string{} // workload -> node of each pod index
	observe := func(d fleet.Decisions) {
		for _, a := range d.Admit {
			nodes := make([]string, len(a.Pods))
			for _, p := range a.Pods {
				nodes[p.Index] = p.Node
			}
			mu.Lock()
			_, again := admitted[a.ID]
			admitted[a.ID] = nodes
			mu.Unlock()
			if again {
				continue
			}
			// The cycle holds the scheduler here, and its bindings go out
			// right after it: these writes land in between.
			zero := int64(0)
			switch a.ID {
			case "team/half":
				require.NoError(t, cl.client.CoreV1().Pods("team").Delete(context.Background(), "half-2",
					metav1.DeleteOptions{GracePeriodSeconds: &zero}))
			case "team/gone":
				require.NoError(t, cl.client.CoreV1().Nodes().Delete(context.Background(), nodes[1], metav1.DeleteOptions{}))
			}
		}
	}
	s := startScheduler(t, cl, clock, "replica-a", observe)
	eventually(t, 20*time.Second, "fleet leads", s.c.Leading)
	nodesOf := func(id string) []string {
		mu.Lock()
		defer mu.Unlock()
		return admitted[id]
	}

	// (a) A pod deleted before its binding.
	cl.createGang(t, "half", "research", "reserved-research", 4, 8, nil)
	eventually(t, 30*time.Second, "half admitted and three pods bound", func() bool {
		nodes := nodesOf("team/half")
		if nodes == nil {
			return false
		}
		for _, i := range []int{0, 1, 3} {
			if cl.pod(t, fmt.Sprintf("half-%d", i)).Spec.NodeName != nodes[i] {
				return false
			}
		}
		return true
	})
	_, err := cl.client.CoreV1().Pods("team").Get(ctx, "half-2", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "half-2 was deleted before its binding: %v", err)
	held := nodesOf("team/half")[2]
	// Cycles run (one a second); the gang keeps its place, and a single pod
	// that would fit anywhere is not put on the held node.
	cl.createPod(t, podSpec{name: "filler", queue: "research", class: "reserved-research", gpus: 8})
	eventually(t, 20*time.Second, "filler bound", func() bool { return cl.pod(t, "filler").Spec.NodeName != "" })
	time.Sleep(3 * time.Second)
	assert.Equal(t, 32, runningGPUs(s, "team/half"), "the gang holds its 4 nodes with 3 pods")
	assert.NotEqual(t, held, cl.pod(t, "filler").Spec.NodeName, "the held node went to another pod")
	for _, i := range []int{0, 1, 3} {
		p := cl.pod(t, fmt.Sprintf("half-%d", i))
		assert.Equal(t, nodesOf("team/half")[i], p.Spec.NodeName, "%s moved", p.Name)
		assert.Nil(t, p.DeletionTimestamp, "%s deleted", p.Name)
	}
	// Its owner creates the pod again: it is bound to the held node.
	cl.createPod(t, podSpec{name: "half-2", queue: "research", class: "reserved-research", group: "half", total: 4, gpus: 8})
	eventually(t, 20*time.Second, "half-2 bound to its held node", func() bool {
		return cl.pod(t, "half-2").Spec.NodeName == held
	})
	t.Logf("(a) half-2 deleted before its binding: half-0,1,3 stayed on %v; the new half-2 went to %s",
		[]string{nodesOf("team/half")[0], nodesOf("team/half")[1], nodesOf("team/half")[3]}, held)

	// (b) A node deleted before the bindings.
	cl.createGang(t, "gone", "research", "reserved-research", 4, 8, nil)
	eventually(t, 30*time.Second, "gone admitted", func() bool { return nodesOf("team/gone") != nil })
	lostNode := nodesOf("team/gone")[1]
	eventually(t, 30*time.Second, "every pod of gone deleted", func() bool {
		for i := range 4 {
			_, err := cl.client.CoreV1().Pods("team").Get(ctx, fmt.Sprintf("gone-%d", i), metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	})
	eventually(t, 10*time.Second, "gone no longer runs", func() bool { return runningGPUs(s, "team/gone") == 0 })
	var free, total int
	s.c.Scheduler(func(sc *fleet.Scheduler) {
		fv := sc.Snapshot().Fleet
		free, total = fv.FreeGPUs, fv.GPUs
	})
	assert.Equal(t, 256*8, total, "the fleet without %s", lostNode)
	assert.Equal(t, total-32-8, free, "only half and filler hold GPUs")
	assert.Equal(t, held, cl.pod(t, "half-2").Spec.NodeName, "half runs on")
	t.Logf("(b) %s deleted before the bindings of gone: its 4 pods deleted, %d of %d GPUs free", lostNode, free, total)
}
