package fleet

import (
	"cmp"
	"slices"
	"time"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
)

// overflow lists, after a cycle, the inference queues whose replicas
// within their guarantee will not get capacity within the target: those
// pending past it, and those whose victims' deadlines fall past it. A
// queue is listed every cycle while it is short, and an EventOverflow
// with 0 GPUs marks the cycle it no longer is, so metrics can integrate
// the overflow GPU-hours.
func (s *Scheduler) overflow(now time.Time, d *Decisions) {
	target := s.cfg.Policy.OverflowAfter
	if target == 0 {
		target = DefaultOverflowAfter
	}
	var short map[quota.NodeID]*Overflow
	add := func(e *entry, since time.Time) {
		if short == nil {
			short = map[quota.NodeID]*Overflow{}
		}
		o := short[e.queue]
		if o == nil {
			o = &Overflow{Queue: e.w.Queue, Since: since}
			short[e.queue] = o
		}
		o.GPUs += e.gpus()
		if since.Before(o.Since) {
			o.Since = since
		}
	}
	for _, e := range s.queued {
		if e.w.Shape != gang.Inference || e.w.Booking != "" {
			continue
		}
		due := e.submitted.Add(target)
		if n, ok := s.books.Nomination(e.w.ID); ok {
			if n.ReadyBy.After(due) {
				add(e, due)
			}
			continue
		}
		// Within its guarantee: the queue's use, this replica included,
		// stays within its nominal quota.
		if now.Before(due) || s.tree.InUse(e.queue, e.flavor)+int64(e.gpus()) > s.tree.Nominal(e.queue, e.flavor) {
			continue
		}
		add(e, due)
	}
	for q, o := range short {
		d.Overflow = append(d.Overflow, *o)
		s.overflowing[q] = true
	}
	slices.SortFunc(d.Overflow, func(a, b Overflow) int { return cmp.Compare(a.Queue, b.Queue) })
	for _, o := range d.Overflow {
		s.emit(Event{Kind: EventOverflow, Time: now, Queue: o.Queue, GPUs: o.GPUs})
	}
	if len(s.overflowing) == len(short) {
		return // no queue stopped overflowing
	}
	for _, q := range slices.Sorted(func(yield func(quota.NodeID) bool) {
		for q := range s.overflowing {
			if !yield(q) {
				return
			}
		}
	}) {
		if short[q] == nil {
			delete(s.overflowing, q)
			s.emit(Event{Kind: EventOverflow, Time: now, Queue: s.tree.Name(q)})
		}
	}
}
