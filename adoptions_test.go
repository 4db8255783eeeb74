package fleet_test

import (
	"cmp"
	"slices"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// hostAdoptions is what a host sees of snap's workloads, in Adoption's
// order: its own specs and pods (pods gives them, lost ones included),
// and what it keeps of drains and nominations (the Kubernetes host keeps
// them in pod annotations).
func hostAdoptions(snap fleet.Snapshot, specs map[string]gang.Workload, pods func(id string) []fleet.PodAssignment) []fleet.Adoption {
	drain := func(d *fleet.DrainView) *fleet.AdoptedDrain {
		if d == nil {
			return nil
		}
		return &fleet.AdoptedDrain{Since: d.Since, Deadline: d.Deadline, Reason: d.Reason, Beneficiaries: d.Beneficiaries,
			Live: d.Live, KillAsked: d.KillAsked, MoveTo: d.MoveTo, Claims: d.Claims}
	}
	var out []fleet.Adoption
	byID := map[string]int{}
	for _, r := range snap.Running {
		if r.SplitOf != "" {
			continue
		}
		w := specs[r.ID]
		w.Drain.LastCheckpoint = r.LastCheckpoint
		byID[r.ID] = len(out)
		// The host's pods on a lost node wait for their replacement.
		held := slices.DeleteFunc(slices.Clone(pods(r.ID)), func(p fleet.PodAssignment) bool {
			return slices.ContainsFunc(r.Lost, func(lp fleet.LostPodView) bool { return lp.Pod == p })
		})
		out = append(out, fleet.Adoption{Workload: w, Submitted: r.Submitted, Seq: r.Seq, Started: r.Started,
			Pods: held, Lost: r.Lost, Drain: drain(r.Drain), Borrowing: r.Borrowing, IdleSince: r.IdleSince, Flavors: r.Flavors})
	}
	for _, r := range snap.Running {
		if r.SplitOf == "" {
			continue
		}
		if i, ok := byID[r.SplitOf]; ok {
			out[i].Shrinking = append(out[i].Shrinking, fleet.ShrinkingPod{Pod: r.SplitPod, Drain: *drain(r.Drain)})
			continue
		}
		w := specs[r.ID]
		w.Drain.LastCheckpoint = r.LastCheckpoint
		out = append(out, fleet.Adoption{Workload: w, Submitted: r.Submitted, Seq: r.Seq, Started: r.Started,
			Pods: pods(r.ID), Drain: drain(r.Drain), Borrowing: r.Borrowing, SplitOf: r.SplitOf, SplitPod: r.SplitPod})
	}
	slices.SortStableFunc(out, func(a, b fleet.Adoption) int { return a.Started.Compare(b.Started) })
	pending := slices.Clone(snap.Pending)
	slices.SortFunc(pending, func(a, b fleet.PendingView) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, p := range pending {
		a := fleet.Adoption{Workload: specs[p.ID], Submitted: p.Submitted, Seq: p.Seq, Reserved: p.Reserved}
		if p.Nomination != nil {
			a.Nominated, a.NominatedReadyBy = p.Nomination.Pods, p.Nomination.ReadyBy
		}
		out = append(out, a)
	}
	return out
}

// snapshotAdoptions is hostAdoptions for a host that keeps no specs or
// pods of its own: the snapshot's specs, and each running workload's pods
// with its lost ones.
func snapshotAdoptions(snap fleet.Snapshot) []fleet.Adoption {
	specs, pods := map[string]gang.Workload{}, map[string][]fleet.PodAssignment{}
	for _, r := range snap.Running {
		specs[r.ID], pods[r.ID] = r.Spec, slices.Clone(r.Pods)
		for _, lp := range r.Lost {
			pods[r.ID] = append(pods[r.ID], lp.Pod)
		}
	}
	for _, p := range snap.Pending {
		specs[p.ID] = p.Spec
	}
	return hostAdoptions(snap, specs, func(id string) []fleet.PodAssignment { return pods[id] })
}
