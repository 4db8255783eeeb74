package sim

// evKind is what a simulation event does when its time comes.
type evKind uint8

const (
	evTick       evKind = iota + 1 // a scheduling cycle (and, on its period, the autoscaler)
	evSample                       // a usage sample and a point of the series
	evTraining                     // a research job arrives
	evTrace                        // the next trace job arrives
	evSpike                        // an inference demand spike starts
	evFinish                       // a run completes its work
	evCheckpoint                   // a training run saves its state
	evDrainExit                    // a drained victim has checkpointed and exits
	evNodeFail                     // a node fails
	evNodeRepair                   // a failed node is back
	evArrival                      // a host-given workload (Config.Arrivals) arrives
)

// event is one entry of the simulation's agenda. Times are nanoseconds
// since the start; seq orders events of the same time by scheduling
// order, so the run is deterministic, except that a sample comes after
// every other event of its time: it sees what they did, and the cycle
// they ran serves it.
type event struct {
	at   int64
	seq  uint64
	kind evKind
	job  int32 // job index, or node index for node events
	gen  int32 // the job's run generation when scheduled; stale events are dropped
}

func (a event) before(b event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if as, bs := a.kind == evSample, b.kind == evSample; as != bs {
		return bs
	}
	return a.seq < b.seq
}

// agenda is a binary min-heap of events by (at, seq). It holds values,
// so pushing and popping do not allocate once the slice has grown.
type agenda struct{ h []event }

func (q *agenda) len() int { return len(q.h) }

func (q *agenda) push(e event) {
	q.h = append(q.h, e)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.h[i].before(q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *agenda) pop() event {
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h = q.h[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && q.h[l].before(q.h[m]) {
			m = l
		}
		if r < last && q.h[r].before(q.h[m]) {
			m = r
		}
		if m == i {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return top
}
