package kueue

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"

	"sigs.k8s.io/yaml"

	"github.com/fleetsched/fleet/quota"
)

// ExportOptions says what Export writes besides the quota tree.
type ExportOptions struct {
	// Resource is the GPU resource name; "" means nvidia.com/gpu.
	Resource string
	// PriorityClasses are written as WorkloadPriorityClasses.
	PriorityClasses []PriorityClass
}

// Export writes a quota tree as Kueue v1beta2 objects in one multi-document
// YAML stream: a ResourceFlavor per flavor, then a Cohort per cohort and a
// ClusterQueue per queue in Spec order, then the priority classes. Parse
// reads it back to the same Spec. Queues select every namespace
// (namespaceSelector: {}), as fleet's queues are not namespaced.
//
// A node with ResourceGroups gets a resource group for each, covering the
// GPU resource when the group covers GPUs and the group's resources, its
// flavors in order. A node without gets one group covering the GPU and
// the other resources its quotas name (Spec.Resources); "cpu" is written
// in millicores, others in their unit, and Parse with those names in
// Options.Resources reads them back. Kueue makes every flavor of a group
// list every covered resource: where a flavor entry lacks one (fleet:
// the queue may not use it), Export writes a nominal quota of 0 and, under
// a cohort, a borrowing limit of 0, which Parse reads back as such.
//
// It refuses a Spec that quota.New refuses (ErrCannotExport wrapping the
// quota error) and a queue that Kueue would refuse: borrowWithinCohort
// with reclaimWithinCohort Never (ErrCannotExport).
func Export(w io.Writer, spec quota.Spec, opts ExportOptions) error {
	if _, err := quota.New(spec); err != nil {
		return &ObjectError{Detail: err.Error(), Err: fmt.Errorf("%w: %w", ErrCannotExport, err)}
	}
	for _, n := range spec.Nodes {
		// Kueue's CEL rule, which Parse mirrors: borrowWithinCohort needs
		// reclaimWithinCohort other than Never.
		r := n.Preemption
		if r.ReclaimWithinCohort == quota.ReclaimNever && r.BorrowWithinCohort.Policy != quota.BorrowNever {
			return &ObjectError{Kind: "ClusterQueue", Name: n.Name, Field: "spec.preemption.borrowWithinCohort.policy",
				Detail: "reclaimWithinCohort Never forbids borrowWithinCohort", Err: ErrCannotExport}
		}
	}
	res := opts.Resource
	if res == "" {
		res = DefaultResource
	}
	var docs []map[string]any
	head := func(kind, name string) map[string]any {
		return map[string]any{"apiVersion": Group + "/v1beta2", "kind": kind, "metadata": map[string]any{"name": name}}
	}
	for _, f := range spec.Flavors {
		d := head("ResourceFlavor", f)
		d["spec"] = map[string]any{}
		docs = append(docs, d)
	}
	for _, n := range spec.Nodes {
		s := map[string]any{}
		if len(n.Quotas) > 0 {
			groups := n.ResourceGroups
			if len(groups) == 0 {
				g := quota.ResourceGroup{GPUs: true, Resources: usedResources(spec.Resources, n.Quotas)}
				for _, q := range n.Quotas {
					g.Flavors = append(g.Flavors, q.Flavor)
				}
				groups = []quota.ResourceGroup{g}
			}
			var rgs []any
			for _, g := range groups {
				rgs = append(rgs, groupEntry(res, g, n))
			}
			s["resourceGroups"] = rgs
		}
		if n.Weight != nil {
			s["fairSharing"] = map[string]any{"weight": strconv.FormatFloat(*n.Weight, 'f', -1, 64)}
		}
		var d map[string]any
		if n.Kind == quota.Cohort {
			d = head("Cohort", n.Name)
			if n.Parent != "" {
				s["parentName"] = n.Parent
			}
		} else {
			d = head("ClusterQueue", n.Name)
			if n.Parent != "" {
				s["cohortName"] = n.Parent
			}
			s["namespaceSelector"] = map[string]any{}
			s["queueingStrategy"] = n.QueueingStrategy.String()
			if f := n.FlavorFungibility; f != (quota.Fungibility{}) {
				ff := map[string]any{}
				if f.WhenCanBorrow == quota.TryNextFlavor {
					ff["whenCanBorrow"] = "TryNextFlavor"
				}
				if f.WhenCanPreempt == quota.Preempt {
					ff["whenCanPreempt"] = "MayStopSearch" // v1beta2's name of Preempt
				}
				s["flavorFungibility"] = ff
			}
			r := n.Preemption
			bwc := map[string]any{"policy": r.BorrowWithinCohort.Policy.String()}
			if th, ok := r.BorrowWithinCohort.Threshold(); ok {
				bwc["maxPriorityThreshold"] = th
			}
			s["preemption"] = map[string]any{
				"withinClusterQueue":  r.WithinQueue.String(),
				"reclaimWithinCohort": r.ReclaimWithinCohort.String(),
				"borrowWithinCohort":  bwc,
			}
		}
		d["spec"] = s
		docs = append(docs, d)
	}
	for _, pc := range opts.PriorityClasses {
		d := head("WorkloadPriorityClass", pc.Name)
		d["value"] = pc.Value
		if pc.Description != "" {
			d["description"] = pc.Description
		}
		docs = append(docs, d)
	}
	bw := bufio.NewWriter(w)
	for i, d := range docs {
		out, err := yaml.Marshal(d)
		if err != nil {
			return &ObjectError{Detail: err.Error(), Err: ErrCannotExport}
		}
		if i > 0 {
			bw.WriteString("---\n")
		}
		bw.Write(out)
	}
	return bw.Flush()
}

// groupEntry writes resource group g of node n as Kueue does: the GPU
// resource res first when the group covers GPUs, then its resources, and
// every flavor listing each of them.
func groupEntry(res string, g quota.ResourceGroup, n quota.NodeSpec) map[string]any {
	var covered []any
	if g.GPUs {
		covered = append(covered, res)
	}
	for _, r := range g.Resources {
		covered = append(covered, r)
	}
	var flavors []any
	for _, name := range g.Flavors {
		i := slices.IndexFunc(n.Quotas, func(q quota.FlavorQuota) bool { return q.Flavor == name })
		q := n.Quotas[i] // quota.New checked that every flavor of a group has an entry
		var rs []any
		if g.GPUs {
			r := map[string]any{"name": res, "nominalQuota": strconv.FormatInt(q.Nominal, 10)}
			if v, ok := q.BorrowingLimit.Get(); ok {
				r["borrowingLimit"] = strconv.FormatInt(v, 10)
			}
			if v, ok := q.LendingLimit.Get(); ok {
				r["lendingLimit"] = strconv.FormatInt(v, 10)
			}
			rs = append(rs, r)
		}
		for _, r := range g.Resources {
			rs = append(rs, resourceEntry(r, q.Resources, n.Parent != ""))
		}
		flavors = append(flavors, map[string]any{"name": q.Flavor, "resources": rs})
	}
	return map[string]any{"coveredResources": covered, "flavors": flavors}
}

// usedResources lists the resources of names (Spec.Resources order) that
// some quota of qs names.
func usedResources(names []string, qs []quota.FlavorQuota) []string {
	var out []string
	for _, name := range names {
		for _, q := range qs {
			if slices.ContainsFunc(q.Resources, func(r quota.ResourceQuota) bool { return r.Name == name }) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// resourceEntry is a flavor's quota of resource name as Kueue writes it;
// a quota the flavor lacks is 0, not to be borrowed either.
func resourceEntry(name string, rqs []quota.ResourceQuota, hasParent bool) map[string]any {
	i := slices.IndexFunc(rqs, func(r quota.ResourceQuota) bool { return r.Name == name })
	if i < 0 {
		e := map[string]any{"name": name, "nominalQuota": "0"}
		if hasParent {
			e["borrowingLimit"] = "0"
		}
		return e
	}
	rq := rqs[i]
	e := map[string]any{"name": name, "nominalQuota": amountText(name, rq.Nominal)}
	if v, ok := rq.BorrowingLimit.Get(); ok {
		e["borrowingLimit"] = amountText(name, v)
	}
	if v, ok := rq.LendingLimit.Get(); ok {
		e["lendingLimit"] = amountText(name, v)
	}
	return e
}

// amountText writes an amount in fleet units as a Kueue quantity.
func amountText(name string, v int64) string {
	if name == "cpu" {
		return strconv.FormatInt(v, 10) + "m"
	}
	return strconv.FormatInt(v, 10)
}
