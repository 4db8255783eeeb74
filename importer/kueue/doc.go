// Package kueue imports Kueue's quota objects as a fleet quota tree
// (quota.Spec) and writes a quota tree back as Kueue v1beta2 objects.
//
// Parse reads a multi-document YAML file of ClusterQueue, Cohort,
// ResourceFlavor, Topology, WorkloadPriorityClass and LocalQueue objects in
// the three API generations found in the wild: v1alpha1 (Cohort with
// spec.parent, Topology), v1beta1 (ClusterQueue spec.cohort, Cohort
// spec.parentName) and v1beta2 (spec.cohortName). The pre-v1beta1 schema
// of Kueue v0.1-v0.2 (v1alpha1 and v1alpha2 ClusterQueues with
// spec.resources) is refused with ErrVersion. Cohorts become quota
// cohorts (implicit ones too), ClusterQueues queues, and the quotas of one
// resource (nvidia.com/gpu unless Options.Resource says otherwise) per
// flavor become nominal quota, borrowing and lending limits. Preemption
// policies, queueing strategy, flavorFungibility (whenCanBorrow and
// whenCanPreempt, in the v1beta1 and v1beta2 spellings) and fair-sharing
// weights carry over.
// Quantities go through Kubernetes' own parser and are rounded up to whole
// GPUs, as Kueue rounds. The other resources a resource group covers that
// Options.Resources names (cpu, memory, extended resources) become the
// flavors' quota.ResourceQuota entries, in fleet units: cpu in
// millicores, memory in bytes, others as counts; a group without GPUs
// gives its flavors 0 GPUs and those resources (CPU-only pod sets). When
// more than one group has flavors fleet models, the groups become
// quota.ResourceGroups (covered resources, flavors in order) for
// quota.Tree.Assign; Export writes them back group by group.
//
// Nothing is dropped silently: other kinds, resources not asked for
// and fields fleet does not model (namespaceSelector, flavorFungibility
// preference, stopPolicy, admission checks...) are listed in Result.Notes. Status and
// metadata other than name and namespace are ignored.
//
// What it is not: it does not talk to an API server, and it does not
// resolve which nodes a ResourceFlavor selects; Result.Flavors gives the
// node labels so the host can match them against its fleet.
//
// Every refusal is an *ObjectError naming the line, kind, name and field;
// several are joined with errors.Join, so one run shows every problem:
//
//	res, err := kueue.Parse(data, kueue.Options{})
//	if err != nil {
//		return err // errors.Is(err, kueue.ErrCycle); errors.As(err, &oe)
//	}
//	tree, err := quota.New(res.Spec)
//	for _, n := range res.Notes { log.Print(n) } // what was not modelled
//	err = kueue.Export(w, tree.Spec(), kueue.ExportOptions{PriorityClasses: res.PriorityClasses})
package kueue
