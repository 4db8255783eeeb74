package script

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// adoptFill adopts one workload on each of nodes=N nodes from from=K on,
// in the fleet's node order, named prefix-K...: counts=a,b,c cycles the
// size of each through the list, one pod of that many GPUs, or, with
// unit=1, that many pods of one GPU. The other keys are submit's.
func (r *Runner) adoptFill(kv map[string]string) (string, error) {
	from, err1 := strconv.Atoi(kv["from"])
	n, err2 := strconv.Atoi(kv["nodes"])
	if err1 != nil || err2 != nil {
		return "", fmt.Errorf("adopt-fill: from= and nodes= are node counts")
	}
	var counts []int
	for _, c := range strings.Split(kv["counts"], ",") {
		v, err := strconv.Atoi(c)
		if err != nil {
			return "", fmt.Errorf("adopt-fill: counts: %w", err)
		}
		counts = append(counts, v)
	}
	kv["pods"] = "1x1"
	nodes := fleet.ReferenceConfig().Topology.Nodes
	if from < 0 || from+n > len(nodes) {
		return "", fmt.Errorf("adopt-fill: nodes %d..%d past the fleet's %d", from, from+n-1, len(nodes))
	}
	for i := from; i < from+n; i++ {
		c := counts[(i-from)%len(counts)]
		if c == 0 {
			continue
		}
		w, err := parseWorkload(kv)
		if err != nil {
			return "", err
		}
		w.ID = fmt.Sprintf("%s-%d", kv["prefix"], i)
		ps := &w.PodSets[0]
		var pods []fleet.PodAssignment
		if kv["unit"] == "1" {
			ps.Count, ps.GPUsPerPod = c, 1
			for j := range c {
				pods = append(pods, fleet.PodAssignment{PodSet: ps.Name, Index: j, Node: nodes[i].Name, GPUs: 1})
			}
		} else {
			ps.Count, ps.GPUsPerPod = 1, c
			pods = []fleet.PodAssignment{{PodSet: ps.Name, Node: nodes[i].Name, GPUs: c}}
		}
		if err := r.S.Adopt(r.Now, fleet.Adoption{Workload: w, Started: r.Now, Pods: pods}); err != nil {
			return "error: " + err.Error() + "\n", nil
		}
	}
	return "ok\n", nil
}

// planDefrag prices opening a domain: level=leaf gpus=0 priority=1000
// flavor=H100 (those are the defaults but for level). The plan is kept
// for defragment.
func (r *Runner) planDefrag(kv map[string]string) (string, error) {
	gpus, prio, flavor := 0, 1000, "H100"
	var err error
	if v, ok := kv["gpus"]; ok {
		if gpus, err = strconv.Atoi(v); err != nil {
			return "", fmt.Errorf("plan-defrag: gpus: %w", err)
		}
	}
	if v, ok := kv["priority"]; ok {
		if prio, err = strconv.Atoi(v); err != nil {
			return "", fmt.Errorf("plan-defrag: priority: %w", err)
		}
	}
	if v, ok := kv["flavor"]; ok {
		flavor = v
	}
	p, err := r.S.PlanDefrag(r.Now, kv["level"], flavor, gpus, int32(prio))
	if err != nil {
		return "error: " + err.Error() + "\n", nil
	}
	r.plan = p
	var b strings.Builder
	fmt.Fprintf(&b, "open %s %s: %d moves, lost %.1f GPU-h, %d GPUs free after\n", p.Level, p.Domain, len(p.Moves), p.LostGPUSeconds/3600, p.FreeGPUs)
	for _, m := range p.Moves {
		fmt.Fprintf(&b, "move %s %s ->%s\n", m.ID, nodeList(m.From), nodeList(m.To))
	}
	return b.String(), nil
}

func nodeList(list []fleet.NodeGPUs) string {
	var b strings.Builder
	for _, x := range list {
		fmt.Fprintf(&b, " %s=%d", x.Node, x.GPUs)
	}
	return b.String()
}

// defragment carries out the last plan-defrag's plan.
func (r *Runner) defragment() (string, error) {
	drains, err := r.S.Defragment(r.Now, r.plan)
	if err != nil {
		return "error: " + err.Error() + "\n", nil
	}
	return fleet.Decisions{Drain: drains}.String(), nil
}

// exitDrains reports every draining workload drained, in ID order.
func (r *Runner) exitDrains() (string, error) {
	var ids []string
	for _, v := range r.S.Snapshot().Running {
		if v.Draining {
			ids = append(ids, v.ID)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := r.S.Exited(r.Now, id, gang.ExitDrained); err != nil {
			return "error: " + err.Error() + "\n", nil
		}
	}
	return fmt.Sprintf("%d drained\n", len(ids)), nil
}

// ranks prints where each rank (pod index) of a running workload's pod
// sets runs, in rank order, runs of ranks on one node joined.
func (r *Runner) ranks(id string) (string, error) {
	for _, v := range r.S.Snapshot().Running {
		if v.ID != id {
			continue
		}
		pods := slices.Clone(v.Pods)
		slices.SortFunc(pods, func(a, b fleet.PodAssignment) int {
			return cmp.Or(strings.Compare(a.PodSet, b.PodSet), cmp.Compare(a.Index, b.Index))
		})
		var b strings.Builder
		for i := 0; i < len(pods); {
			j := i
			for j+1 < len(pods) && pods[j+1].PodSet == pods[i].PodSet && pods[j+1].Node == pods[i].Node {
				j++
			}
			fmt.Fprintf(&b, "%s[%d-%d] %s\n", pods[i].PodSet, pods[i].Index, pods[j].Index, pods[i].Node)
			i = j + 1
		}
		return b.String(), nil
	}
	return "error: " + id + " does not run\n", nil
}

// parseRanks reads ranks=2@node!,8@leaf: rank groups of the first pod
// set, smallest first, "!" for a required one.
func parseRanks(v string) ([]gang.RankGroup, error) {
	var out []gang.RankGroup
	for _, g := range strings.Split(v, ",") {
		size, level, ok := strings.Cut(g, "@")
		n, err := strconv.Atoi(size)
		if !ok || err != nil {
			return nil, fmt.Errorf("ranks=%q: want SIZE@LEVEL[!]", v)
		}
		level, required := strings.CutSuffix(level, "!")
		out = append(out, gang.RankGroup{Size: n, Level: level, Required: required})
	}
	return out, nil
}
