package sim

import (
	"math"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// Hot-swap. A training gang of more than one node declares that it
// survives the loss of a node (its framework restarts the lost rank from
// the last checkpoint), unless Config.NoHotSwap. When a node under it
// fails, the gang keeps its other nodes and stops at its last checkpoint
// (the work since is lost, as for a failed run); it makes no progress
// until the scheduler replaces every lost pod (Decisions.Replace), then
// pays the restart overhead and runs on. Without a replacement within
// the scheduler's wait (Decisions.Failed) it is requeued whole, as a gang
// that does not survive.

// pausedAt is a run start no simulated time reaches: progress stays at
// the last checkpoint.
const pausedAt = math.MaxInt64 / 4

// losePods records the loss of node n under every running gang that
// survives it (the scheduler did not list it as affected).
func (sm *sim) losePods(n int32) {
	for _, i := range sm.live {
		j := sm.jobs[i]
		g := 0
		kept := j.pods[:0]
		for _, p := range j.pods {
			if p.node == n {
				g += p.gpus
			} else {
				kept = append(kept, p)
			}
		}
		if g == 0 {
			continue
		}
		j.pods = kept
		sm.nodeUsed[n] -= g
		if j.lostGPUs == 0 {
			lost := sm.progress(j) - j.done
			sm.res.HotSwapLostGPUh += float64(lost) * float64(j.gpus) / float64(time.Hour)
			j.gen++ // its finish and checkpoints wait for the replacement
			j.runStart = pausedAt
			j.lostAt = sm.now
		}
		j.lostGPUs += g
		sm.res.PodsLost++
	}
}

// hotSwaps carries out the cycle's replacements and failed hot-swaps.
func (sm *sim) hotSwaps(d fleet.Decisions) {
	for _, x := range d.Replace {
		i, ok := sm.byID[x.ID]
		n, known := sm.nodeIdx[x.NewNode]
		if !ok || !known || sm.jobs[i].lostGPUs < x.GPUs {
			sm.violate("replacement for %q, which lost no pod", x.ID)
			continue
		}
		j := sm.jobs[i]
		sm.nodeUsed[n] += x.GPUs
		if sm.nodeUsed[n] > sm.nodeCap[n] {
			sm.violate("node %q double-booked by the replacement for %q", x.NewNode, x.ID)
		}
		j.pods = append(j.pods, pod{node: n, gpus: x.GPUs})
		j.lostGPUs -= x.GPUs
		if j.lostGPUs > 0 {
			continue
		}
		sm.res.HotSwaps++
		sm.res.HotSwapWaits = append(sm.res.HotSwapWaits, time.Duration(sm.now-j.lostAt))
		sm.res.HotSwapRestartGPUh += float64(sm.cfg.RestartOverhead) * float64(j.gpus) / float64(time.Hour)
		j.runStart = sm.now + int64(sm.cfg.RestartOverhead)
		if j.work > 0 {
			sm.push(event{at: j.runStart + j.work - j.done, kind: evFinish, job: i, gen: j.gen})
			if j.w.Drain.CheckpointInterval > 0 {
				sm.push(event{at: j.runStart + int64(j.w.Drain.CheckpointInterval), kind: evCheckpoint, job: i, gen: j.gen})
			}
		}
	}
	for _, id := range d.Failed {
		i, ok := sm.byID[id]
		if !ok || sm.jobs[i].lostGPUs == 0 {
			sm.violate("failed hot-swap of %q, which lost no pod", id)
			continue
		}
		j := sm.jobs[i]
		sm.res.HotSwapsFailed++
		sm.res.FailedRuns++
		sm.res.FailureRestartGPUh += float64(sm.cfg.RestartOverhead) * float64(j.gpus) / float64(time.Hour)
		j.lostGPUs = 0
		sm.release(j)
		sm.requeue(i)
	}
}

// survives marks a multi-node training gang as one that survives the
// loss of a node.
func (sm *sim) survives(w *gang.Workload) {
	if !sm.cfg.NoHotSwap && w.Shape == gang.Training && len(w.PodSets) == 1 && w.PodSets[0].Count > 1 {
		w.Drain.SurvivesNodeLoss = true
	}
}
