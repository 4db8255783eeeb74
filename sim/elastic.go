package sim

import (
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// Elastic batch. Unless Config.FixedBatch, a batch job runs its GPUs as
// pods it can do without: pods of one GPU up to 8 GPUs, of 8 GPUs beyond,
// down to one pod. Its work is divisible: it progresses in proportion to
// the GPUs it holds, so a job admitted small, or shrunk, runs longer, and
// one grown back runs faster. Giving up a pod loses that pod's work since
// the job's last checkpoint; the job runs on.

// elasticBatch makes a batch workload's pod set elastic.
func elasticBatch(w gang.Workload) gang.Workload {
	ps := &w.PodSets[0]
	if ps.Count == 1 && ps.GPUsPerPod > 1 {
		ps.Count, ps.GPUsPerPod = ps.GPUsPerPod, 1
	}
	if ps.Count > 1 {
		ps.MinCount = 1
	}
	return w
}

// batchJob is the batch workload the simulator submits.
func (sm *sim) batchJob(w gang.Workload) gang.Workload {
	if sm.cfg.FixedBatch {
		return w
	}
	return elasticBatch(w)
}

// pace is the progress d of run time makes at the job's size: d times
// its GPUs over the GPUs of its full size.
func (j *job) pace(d int64) int64 {
	if j.gpus == j.full || j.full == 0 {
		return d
	}
	return d * int64(j.gpus) / int64(j.full)
}

// settle folds the progress made since runStart at the current size into
// carry, so that the size can change from now.
func (sm *sim) settle(j *job) {
	if sm.now > j.runStart {
		j.carry += j.pace(sm.now - j.runStart)
		j.runStart = sm.now
	}
}

// scheduleFinish pushes the event at which a running job completes its
// work at its current size; earlier finish events become stale.
func (sm *sim) scheduleFinish(i int32, j *job) {
	if j.work <= 0 || j.gpus == 0 {
		return
	}
	left := j.work - j.done - j.carry
	if j.gpus != j.full {
		left = (left*int64(j.full) + int64(j.gpus) - 1) / int64(j.gpus)
	}
	j.finishAt = max(j.runStart, sm.now) + max(0, left)
	sm.push(event{at: j.finishAt, kind: evFinish, job: i, gen: j.gen})
}

// shrink carries out a drain of one pod an elastic job gives up: the pod
// becomes a job of its own that drains (and is killed) as any victim,
// losing the pod's share of the work since the job's last checkpoint;
// the job runs on without it.
func (sm *sim) shrink(d fleet.Drain) {
	pi, ok := sm.byID[d.Of]
	if !ok || sm.jobs[pi].state != jsRunning {
		sm.violate("shrink of %q, which is not running", d.Of)
		return
	}
	p := sm.jobs[pi]
	n, ok := sm.nodeIdx[d.Pod.Node]
	k := -1
	for x, pd := range p.pods {
		if ok && pd.node == n && pd.gpus == d.Pod.GPUs {
			k = x
			break
		}
	}
	if k < 0 || p.gpus <= d.Pod.GPUs {
		sm.violate("shrink of %q: no pod of %d GPUs on %q", d.Of, d.Pod.GPUs, d.Pod.Node)
		return
	}
	g := d.Pod.GPUs
	sm.settle(p)
	// The work since the checkpoint, in GPU-time, and the pod's part of it.
	unsaved := float64(p.carry) * float64(p.full)
	lost := unsaved * float64(g) / float64(p.gpus)
	p.carry -= p.carry * int64(g) / int64(p.gpus)
	sm.account(p, -1)
	p.gpus -= g
	p.pods = append(p.pods[:k:k], p.pods[k+1:]...)
	sm.account(p, 1)
	sm.scheduleFinish(pi, p)

	w := p.w
	w.ID, w.PodSets = d.ID, []gang.PodSet{{Name: d.Pod.PodSet, Count: 1, GPUsPerPod: g}}
	i := int32(len(sm.jobs))
	x := &job{w: w, gpus: g, full: g, pods: []pod{{node: n, gpus: g}}, service: -1, queue: p.queue,
		state: jsRunning, split: true, splitLost: lost, activity: p.activity, mfu: p.mfu, runStart: sm.now}
	sm.jobs = append(sm.jobs, x)
	sm.byID[d.ID] = i
	sm.account(x, 1)
	x.live = len(sm.live)
	sm.live = append(sm.live, i)
	sm.res.Shrinks++
	sm.drain(d)
}

// splitGone ends a pod given up by a shrink: its lost work is charged
// once, and it is not queued again.
func (sm *sim) splitGone(i int32, how gang.ExitReason, lost *float64) {
	j := sm.jobs[i]
	*lost += j.splitLost / float64(time.Hour)
	sm.exit(i, how)
	j.state = jsGone
}

// grow starts more pods of a running elastic job.
func (sm *sim) grow(g fleet.Growth) {
	i, ok := sm.byID[g.ID]
	if !ok || sm.jobs[i].state != jsRunning {
		sm.violate("grow of %q, which is not running", g.ID)
		return
	}
	j := sm.jobs[i]
	sm.settle(j)
	sm.account(j, -1)
	for _, p := range g.Pods {
		n, ok := sm.nodeIdx[p.Node]
		if !ok {
			sm.violate("%q grown on unknown node %q", g.ID, p.Node)
			continue
		}
		sm.nodeUsed[n] += p.GPUs
		if sm.nodeUsed[n] > sm.nodeCap[n] {
			sm.violate("node %q double-booked: %d of %d GPUs after growing %q", p.Node, sm.nodeUsed[n], sm.nodeCap[n], g.ID)
		}
		j.pods = append(j.pods, pod{node: n, gpus: p.GPUs})
		j.gpus += p.GPUs
	}
	if j.gpus > j.full {
		sm.violate("%q grown to %d GPUs, its full size is %d", g.ID, j.gpus, j.full)
	}
	sm.account(j, 1)
	sm.res.Grows++
	sm.scheduleFinish(i, j)
}

// splitGoneLost ends a pod given up by a shrink whose node failed: the
// scheduler already released it; its lost work is charged once.
func (sm *sim) splitGoneLost(i int32, lost *float64) {
	j := sm.jobs[i]
	*lost += j.splitLost / float64(time.Hour)
	j.state = jsGone
}

// elastic reports whether w has a pod set that may run below its count.
func elastic(w gang.Workload) bool {
	for _, ps := range w.PodSets {
		if ps.Min() < ps.Count {
			return true
		}
	}
	return false
}
