package sim

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/topology"
)

// carryOn takes over the work of Config.From, as a host restarting
// against a running scheduler would: from its Snapshot, every running
// workload runs on where it is, with the run time it has left (its
// ExpectedRuntime less what it has run, or Config.Remaining), draining
// victims exit within the drain time (or hang to be killed, if already
// asked), pending work stays queued, and down nodes are repaired. Replicas
// named after the model's inference services join their service, so the
// autoscaler scales them; new IDs continue after the highest number seen.
func (sm *sim) carryOn() {
	snap := sm.s.Snapshot()
	now := sm.at(0)
	svc := map[string]int{}
	for i, sv := range sm.services {
		svc[sv.name] = i
	}
	// join adds job i to its inference service, if it is one's replica.
	join := func(i int32, id string) int {
		name, num, ok := splitID(id)
		si, known := svc[name]
		if !ok || !known || sm.jobs[i].w.Shape != gang.Inference {
			sm.nextID = max(sm.nextID, num)
			return -1
		}
		sm.services[si].next = max(sm.services[si].next, num)
		sm.services[si].replicas = append(sm.services[si].replicas, i)
		return si
	}
	for _, v := range snap.Running {
		work := int64(sm.cfg.Remaining)
		if rt := v.Spec.ExpectedRuntime; rt > 0 {
			work = int64(max(rt-now.Sub(v.Started), time.Minute))
		}
		i := sm.newJob(v.Spec, work, -1)
		j := sm.jobs[i]
		j.service = join(i, v.ID)
		// An elastic job runs at the size it has (its pods and those lost
		// with a node), not its full size: a Grow takes it back up.
		j.gpus = 0
		for _, p := range v.Pods {
			j.gpus += p.GPUs
		}
		for _, lp := range v.Lost {
			j.gpus += lp.Pod.GPUs
		}
		sm.place(i, v.Pods)
		if v.Drain == nil {
			continue
		}
		j.state, j.deadline = jsDraining, int64(v.Drain.Deadline.Sub(sm.start))
		sm.draining = append(sm.draining, i)
		j.fail = !v.Drain.KillAsked.IsZero() || sm.rng.Float64() < sm.cfg.DrainFailShare
		if !j.fail {
			c := sm.cfg
			t := int64(c.DrainMin) + int64(sm.rng.Float64()*float64(c.DrainMax-c.DrainMin))
			sm.push(event{at: t, kind: evDrainExit, job: i, gen: j.gen})
		}
	}
	for _, v := range snap.Pending {
		i := sm.newJob(v.Spec, int64(v.Spec.ExpectedRuntime), -1)
		sm.jobs[i].service = join(i, v.ID)
		sm.jobs[i].state = jsPending
		sm.pendingDelta(sm.jobs[i], 1)
	}
	for _, sv := range sm.services {
		slices.SortFunc(sv.replicas, func(a, b int32) int {
			_, x, _ := splitID(sm.jobs[a].w.ID)
			_, y, _ := splitID(sm.jobs[b].w.ID)
			return x - y
		})
	}
	for _, h := range snap.Fleet.Unhealthy {
		n, ok := sm.nodeIdx[h.Node]
		if !ok || !h.Health.Gone() {
			continue
		}
		sm.nodeDown[n] = true
		sm.healthy -= sm.nodeCap[n]
		if h.Health == topology.Down {
			c := sm.cfg
			rep := int64(c.RepairMin) + int64(sm.rng.Float64()*float64(c.RepairMax-c.RepairMin))
			sm.push(event{at: rep, kind: evNodeRepair, job: n})
		}
	}
	sm.dirty = true
}

// place runs job i on the pods the scheduler gave it, from the start.
func (sm *sim) place(i int32, pods []fleet.PodAssignment) {
	j := sm.jobs[i]
	j.state = jsRunning
	for _, p := range pods {
		n, ok := sm.nodeIdx[p.Node]
		if !ok {
			sm.violate("%q runs on unknown node %q", j.w.ID, p.Node)
			continue
		}
		sm.nodeUsed[n] += p.GPUs
		j.pods = append(j.pods, pod{node: n, gpus: p.GPUs})
	}
	j.runStart, j.done = 0, 0 // the run is counted from the simulation's start
	sm.running(i, j)
}

// splitID splits "svc-tp8-0-17" into "svc-tp8-0" and 17; ok is false
// when the ID does not end in a number.
func splitID(id string) (prefix string, num int, ok bool) {
	k := strings.LastIndexByte(id, '-')
	if k < 0 {
		return id, 0, false
	}
	n, err := strconv.Atoi(id[k+1:])
	if err != nil {
		return id, 0, false
	}
	return id[:k], n, true
}
