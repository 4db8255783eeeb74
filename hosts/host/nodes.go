package host

import "github.com/fleetsched/fleet"

// Nodes lists the node of each of a workload's n pods (one pod set)
// from an admission's or nomination's assignments: Nodes(pods, n)[i] is
// the node of pod i, "" for an index pods does not list. Assignments
// with an index of n or more are left out.
func Nodes(pods []fleet.PodAssignment, n int) []string {
	nodes := make([]string, n)
	for _, p := range pods {
		if p.Index >= 0 && p.Index < n {
			nodes[p.Index] = p.Node
		}
	}
	return nodes
}
