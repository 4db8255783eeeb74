package fleet

import "github.com/fleetsched/fleet/quota"

// quotaRefusals keeps fitsQuota's refusals of whole-GPU requests, one
// per queue and model, with the counts of changes of the quota tree and
// the books they were found at: a cycle asks for the same queue again
// and again (every pending workload of a queue over its quota, an
// elastic one at several sizes). A refusal moves with the request only
// through its size: with Available what the queue may still take (the
// promised victims counted as gone when any drain), a request of g GPUs
// is refused exactly when g > Available, with the same reason, short by
// g - Available. So while the counts stand, any larger request than
// Available is refused alike, without asking the tree.
type quotaRefusals struct {
	at   quotaStamp
	kept []quota.Verdict
}

// quotaStamp is the count of changes of what fitsQuota reads.
type quotaStamp struct{ tree, books uint64 }

// quotaFits is fitsQuota's verdict on gpus more GPUs of flavor f for
// queue q.
func (s *Scheduler) quotaFits(q quota.NodeID, f quota.FlavorID, gpus int64) quota.Verdict {
	m := &s.quotaRefusals
	if at := (quotaStamp{s.tree.Changes(), s.books.Version()}); m.at != at {
		m.at, m.kept = at, m.kept[:0]
	}
	for i := range m.kept {
		if k := &m.kept[i]; k.Queue == q && k.Flavor == f && gpus > k.Available {
			v := *k
			v.GPUs, v.Reason.ShortBy = gpus, gpus-k.Available
			if verifyQuotaRefusals {
				checkQuotaRefusal(v, s.fitsQuota(func() quota.Verdict { return s.tree.Fits(q, f, gpus) }))
			}
			return v
		}
	}
	v := s.fitsQuota(func() quota.Verdict { return s.tree.Fits(q, f, gpus) })
	if !v.Fits() && v.Reason.Kind != quota.ReasonBadRequest {
		// A bad request (a size beyond MaxAmount) says nothing of others.
		m.kept = append(m.kept, v)
	}
	return v
}
