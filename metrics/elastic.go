package metrics

import (
	"github.com/fleetsched/fleet"
)

// CauseShrink is the cause of the pods elastic workloads gave up to make
// room: only those pods' work is lost, not their workload's.
const CauseShrink = "shrink"

// shrunk takes a drain of one pod an elastic workload gives up (the
// event names the workload in Of): the pod's GPUs leave the workload's
// books for a victim of their own, whose exit is charged the work that
// pod loses since the workload's last checkpoint, under CauseShrink, and
// no restart: the workload runs on without it.
func (r *Recorder) shrunk(e *fleet.Event, t int64) {
	p := r.find(e.Of)
	if p == nil || p.draining || p.gpus <= 0 || r.find(e.Workload) != nil {
		r.unmatched++
		return
	}
	r.integrate(&r.st, p, t)
	g := min(float64(e.GPUs), p.gpus)
	share := g / p.gpus
	pod := *p
	pod.id = e.Workload
	pod.gpus, pod.borrowed, pod.flops = g, p.borrowed*share, p.flops*share
	pod.idleSince, pod.lowSince, pod.split = noIdle, noIdle, true
	p.gpus, p.borrowed, p.flops = p.gpus-g, p.borrowed*(1-share), p.flops*(1-share)
	var i int32
	if n := len(r.freeWork); n > 0 {
		i = r.freeWork[n-1]
		r.freeWork = r.freeWork[:n-1]
		r.work[i] = pod
	} else {
		i = int32(len(r.work))
		r.work = append(r.work, pod)
	}
	r.live[e.Workload] = i
	w := &r.work[i]
	w.cause = r.causeID(w.team, CauseShrink)
	b := r.st.point(t)
	b.cell(w.cell).Preemptions++
	b.cause(w.cause).Count++
	w.draining, w.drainAt = true, t
}

// grown takes pods an elastic workload started: from now on it holds
// e.GPUs, the pods started borrowing e.BorrowedGPUs of them.
func (r *Recorder) grown(e *fleet.Event, t int64) {
	w := r.find(e.Workload)
	if w == nil || float64(e.GPUs) < w.gpus {
		r.unmatched++
		return
	}
	r.integrate(&r.st, w, t)
	if w.gpus > 0 {
		w.flops *= float64(e.GPUs) / w.gpus
	}
	w.gpus = float64(e.GPUs)
	w.borrowed = min(w.gpus, w.borrowed+float64(e.BorrowedGPUs))
}
