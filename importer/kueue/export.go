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
// A node whose quotas name other resources (Spec.Resources) gets one
// resource group covering the GPU and those resources ("cpu" written in
// millicores, others in their unit); Parse with those names in
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
			others := usedResources(spec.Resources, n.Quotas)
			covered := []any{res}
			for _, r := range others {
				covered = append(covered, r)
			}
			var flavors []any
			for _, q := range n.Quotas {
				r := map[string]any{"name": res, "nominalQuota": strconv.FormatInt(q.Nominal, 10)}
				if v, ok := q.BorrowingLimit.Get(); ok {
					r["borrowingLimit"] = strconv.FormatInt(v, 10)
				}
				if v, ok := q.LendingLimit.Get(); ok {
					r["lendingLimit"] = strconv.FormatInt(v, 10)
				}
				rs := []any{r}
				for _, name := range others {
					rs = append(rs, resourceEntry(name, q.Resources, n.Parent != ""))
				}
				flavors = append(flavors, map[string]any{"name": q.Flavor, "resources": rs})
			}
			s["resourceGroups"] = []any{map[string]any{"coveredResources": covered, "flavors": flavors}}
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
			if n.FlavorFungibility.WhenCanBorrow == quota.TryNextFlavor {
				s["flavorFungibility"] = map[string]any{"whenCanBorrow": n.FlavorFungibility.WhenCanBorrow.String()}
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
