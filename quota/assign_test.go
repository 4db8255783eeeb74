package quota_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/quota"
)

// groupSpec is a queue "q" under cohort "all" with a GPU group (H100,
// then A100) and a cpu/memory group (default, then spot), and a lender.
func groupSpec(f quota.Fungibility) quota.Spec {
	res := func(cpu, mem int64) []quota.ResourceQuota {
		return []quota.ResourceQuota{{Name: "cpu", Nominal: cpu}, {Name: "memory", Nominal: mem}}
	}
	return quota.Spec{
		Flavors:   []string{"H100", "A100", "default", "spot"},
		Resources: []string{"cpu", "memory"},
		Nodes: []quota.NodeSpec{
			{Name: "all", Kind: quota.Cohort},
			{Name: "q", Parent: "all", Kind: quota.Queue, FlavorFungibility: f,
				Quotas: []quota.FlavorQuota{
					{Flavor: "H100", Nominal: 8}, {Flavor: "A100", Nominal: 16},
					{Flavor: "default", Resources: res(64000, 1<<30)}, {Flavor: "spot", Resources: res(32000, 1<<30)},
				},
				ResourceGroups: []quota.ResourceGroup{
					{GPUs: true, Flavors: []string{"H100", "A100"}},
					{Resources: []string{"cpu", "memory"}, Flavors: []string{"default", "spot"}},
				}},
			{Name: "lender", Parent: "all", Kind: quota.Queue,
				Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 8}, {Flavor: "default", Resources: res(64000, 1<<30)}}},
		},
	}
}

func mustTree(t require.TestingT, s quota.Spec) *quota.Tree {
	tr, err := quota.New(s)
	require.NoError(t, err)
	return tr
}

func ids(t testing.TB, tr *quota.Tree, names ...string) []quota.FlavorID {
	var out []quota.FlavorID
	for _, n := range names {
		f, ok := tr.Flavor(n)
		require.True(t, ok, n)
		out = append(out, f)
	}
	return out
}

func TestResourceGroupsRoundTripThroughSpecCloneAndJSON(t *testing.T) {
	s := groupSpec(quota.Fungibility{WhenCanPreempt: quota.Preempt})
	tr := mustTree(t, s)
	q, _ := tr.Node("q")
	assert.Equal(t, s.Nodes[1].ResourceGroups, tr.Spec().Nodes[1].ResourceGroups)
	assert.Nil(t, tr.Spec().Nodes[2].ResourceGroups, "a node without groups lists none")
	assert.Equal(t, 2, tr.NumGroups(q))
	assert.True(t, tr.HasResourceGroups(q))
	lender, _ := tr.Node("lender")
	assert.Equal(t, 1, tr.NumGroups(lender), "one implicit group")
	assert.Equal(t, ids(t, tr, "H100", "default"), tr.GroupFlavors(lender, 0))
	cpu, _ := tr.Resource("cpu")
	assert.Equal(t, 1, tr.GroupOf(q, cpu))
	assert.Equal(t, 0, tr.GroupOf(q, quota.GPU))
	assert.Equal(t, tr.Spec(), tr.Clone().Spec())
	b, err := json.Marshal(tr.Spec())
	require.NoError(t, err)
	var back quota.Spec
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, tr.Spec(), mustTree(t, back).Spec())
	assert.Contains(t, string(b), `"whenCanPreempt":"Preempt"`)
}

func TestResourceGroupRulesRefuseBadGroups(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(n *quota.NodeSpec)
	}{
		{"resource in two groups", func(n *quota.NodeSpec) { n.ResourceGroups[0].Resources = []string{"cpu"} }},
		{"flavor in two groups", func(n *quota.NodeSpec) { n.ResourceGroups[1].Flavors = append(n.ResourceGroups[1].Flavors, "H100") }},
		{"flavor in no group", func(n *quota.NodeSpec) { n.ResourceGroups[1].Flavors = n.ResourceGroups[1].Flavors[:1] }},
		{"flavor without quota entry", func(n *quota.NodeSpec) { n.Quotas = n.Quotas[1:] }},
		{"GPUs in a group without GPUs", func(n *quota.NodeSpec) { n.Quotas[2].Nominal = 1 }},
		{"resource its group does not cover", func(n *quota.NodeSpec) {
			n.Quotas[0].Resources = []quota.ResourceQuota{{Name: "cpu", Nominal: 1}}
		}},
		{"unknown resource", func(n *quota.NodeSpec) { n.ResourceGroups[1].Resources = []string{"cpu", "disk"} }},
		{"empty group", func(n *quota.NodeSpec) { n.ResourceGroups[1].Resources = nil }},
		{"group without flavors", func(n *quota.NodeSpec) {
			n.ResourceGroups = append(n.ResourceGroups, quota.ResourceGroup{Resources: []string{"disk"}})
		}},
		{"GPUs in two groups", func(n *quota.NodeSpec) { n.ResourceGroups[1].GPUs = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := groupSpec(quota.Fungibility{})
			tc.edit(&s.Nodes[1])
			_, err := quota.New(s)
			assert.ErrorIs(t, err, quota.ErrInvalidSpec)
			if err != nil {
				assert.Contains(t, err.Error(), `node "q"`)
			}
			tr := mustTree(t, groupSpec(quota.Fungibility{}))
			assert.Error(t, tr.SetNode(s.Nodes[1]), "SetNode refuses it too")
			assert.Equal(t, groupSpec(quota.Fungibility{}).Nodes[1].ResourceGroups, tr.Spec().Nodes[1].ResourceGroups)
		})
	}
	_, err := quota.New(quota.Spec{Flavors: []string{"a"}, Nodes: []quota.NodeSpec{{Name: "q", Kind: quota.Queue,
		FlavorFungibility: quota.Fungibility{WhenCanPreempt: 9}}}})
	assert.ErrorIs(t, err, quota.ErrInvalidSpec)
}

func TestSetNodeReordersAResourceGroupsFlavors(t *testing.T) {
	tr := mustTree(t, groupSpec(quota.Fungibility{}))
	n := tr.Spec().Nodes[1]
	n.ResourceGroups[1].Flavors = []string{"spot", "default"}
	require.NoError(t, tr.SetNode(n))
	q, _ := tr.Node("q")
	assert.Equal(t, ids(t, tr, "spot", "default"), tr.GroupFlavors(q, 1))
	a := tr.Assign(q, []quota.PodSetRequest{{Resources: []quota.Amount{{Resource: 1, Value: 1000}}}}, quota.AssignOptions{})
	assert.Equal(t, ids(t, tr, "spot")[0], a.PodSets[0][1].Flavor)
}

func TestAssignGivesGPUsAndCPUsTheirOwnGroupsFlavors(t *testing.T) {
	tr := mustTree(t, groupSpec(quota.Fungibility{}))
	q, _ := tr.Node("q")
	cpu, _ := tr.Resource("cpu")
	f := ids(t, tr, "H100", "A100", "default", "spot")
	launcher := quota.PodSetRequest{Resources: []quota.Amount{{Resource: cpu, Value: 4000}}}
	workers := quota.PodSetRequest{MilliGPUs: 8000, Resources: []quota.Amount{{Resource: cpu, Value: 48000}}}
	a := tr.Assign(q, []quota.PodSetRequest{launcher, workers}, quota.AssignOptions{})
	assert.Equal(t, quota.AssignFit, a.Mode)
	assert.Equal(t, -1, a.Failed)
	assert.Equal(t, [][]quota.GroupAssignment{
		{{Flavor: quota.NoFlavor, Mode: quota.AssignFit}, {Flavor: f[2], Mode: quota.AssignFit}},
		{{Flavor: f[0], Mode: quota.AssignFit}, {Flavor: f[2], Mode: quota.AssignFit}},
	}, a.PodSets)
	assert.Equal(t, []quota.Charge{{Flavor: f[0], Resource: quota.GPU, Value: 8000}, {Flavor: f[2], Resource: cpu, Value: 52000}}, a.Charges)
	require.NoError(t, tr.AddCharges(q, a.Charges))
	assert.Equal(t, int64(52000), tr.UsageOf(q, f[2], cpu))

	// The next workload's cpu no longer fits "default" within nominal,
	// but borrows it from the lender: Borrow stops there.
	b := tr.Assign(q, []quota.PodSetRequest{{Resources: []quota.Amount{{Resource: cpu, Value: 20000}}}}, quota.AssignOptions{})
	assert.Equal(t, quota.AssignFit, b.Mode)
	assert.Equal(t, f[2], b.PodSets[0][1].Flavor)
	assert.True(t, b.Borrowing())
	require.NoError(t, tr.RemoveCharges(q, a.Charges))
	assert.Zero(t, tr.UsageOf(q, f[2], cpu))
}

// Charges come ordered by flavor, then resource, whatever order the pod
// sets ask them in.
func TestAssignChargesAreOrderedByFlavorThenResource(t *testing.T) {
	tr := mustTree(t, groupSpec(quota.Fungibility{}))
	q, _ := tr.Node("q")
	cpu, _ := tr.Resource("cpu")
	mem, _ := tr.Resource("memory")
	f := ids(t, tr, "H100", "default")
	launcher := quota.PodSetRequest{Resources: []quota.Amount{{Resource: mem, Value: 1 << 20}}}
	workers := quota.PodSetRequest{MilliGPUs: 8000, Resources: []quota.Amount{{Resource: cpu, Value: 48000}}}
	a := tr.Assign(q, []quota.PodSetRequest{launcher, workers}, quota.AssignOptions{})
	assert.Equal(t, []quota.Charge{{Flavor: f[0], Resource: quota.GPU, Value: 8000},
		{Flavor: f[1], Resource: cpu, Value: 48000}, {Flavor: f[1], Resource: mem, Value: 1 << 20}}, a.Charges)
}

func TestAssignWhenCanBorrowTryNextFlavorTakesTheFlavorWithinNominal(t *testing.T) {
	tr := mustTree(t, groupSpec(quota.Fungibility{WhenCanBorrow: quota.TryNextFlavor}))
	q, _ := tr.Node("q")
	cpu, _ := tr.Resource("cpu")
	f := ids(t, tr, "H100", "A100", "default", "spot")
	require.NoError(t, tr.AddCharges(q, []quota.Charge{{Flavor: f[2], Resource: cpu, Value: 60000}}))
	a := tr.Assign(q, []quota.PodSetRequest{{Resources: []quota.Amount{{Resource: cpu, Value: 8000}}}}, quota.AssignOptions{})
	assert.Equal(t, f[3], a.PodSets[0][1].Flavor, "spot fits within nominal")
	assert.False(t, a.Borrowing())
	// When no flavor fits within nominal, the least borrowing one is taken.
	c := tr.Assign(q, []quota.PodSetRequest{{Resources: []quota.Amount{{Resource: cpu, Value: 40000}}}}, quota.AssignOptions{})
	assert.Equal(t, f[2], c.PodSets[0][1].Flavor, "only default can borrow (from the lender)")
	assert.True(t, c.Borrowing())
}

func TestAssignWhenCanPreemptDecidesBetweenPreemptingAndTheNextFlavor(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    quota.Fungibility
		want string
		mode quota.AssignMode
	}{
		{"try next flavor", quota.Fungibility{}, "A100", quota.AssignFit},
		{"preempt", quota.Fungibility{WhenCanPreempt: quota.Preempt}, "H100", quota.AssignPreempt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := mustTree(t, groupSpec(tc.f))
			q, _ := tr.Node("q")
			lender, _ := tr.Node("lender")
			h100, _ := tr.Flavor("H100")
			require.NoError(t, tr.AddUsage(q, h100, 4))
			require.NoError(t, tr.AddUsage(lender, h100, 8))
			a := tr.Assign(q, []quota.PodSetRequest{{MilliGPUs: 8000}}, quota.AssignOptions{})
			want, _ := tr.Flavor(tc.want)
			assert.Equal(t, want, a.PodSets[0][0].Flavor)
			assert.Equal(t, tc.mode, a.Mode)
		})
	}
}

// A flavor whose room the queue can reclaim within its own nominal quota
// (no borrowing) stops the search under WhenCanPreempt Preempt, even when
// WhenCanBorrow is TryNextFlavor: only borrowing sends it on.
func TestAssignPreemptWithinNominalStopsEvenWhenBorrowingTriesTheNext(t *testing.T) {
	tr := mustTree(t, groupSpec(quota.Fungibility{WhenCanPreempt: quota.Preempt, WhenCanBorrow: quota.TryNextFlavor}))
	q, _ := tr.Node("q")
	lender, _ := tr.Node("lender")
	h100, _ := tr.Flavor("H100")
	require.NoError(t, tr.AddUsage(lender, h100, 16), "the lender borrows all of q's H100")
	a := tr.Assign(q, []quota.PodSetRequest{{MilliGPUs: 8000}}, quota.AssignOptions{})
	assert.Equal(t, h100, a.PodSets[0][0].Flavor)
	assert.Equal(t, quota.AssignPreempt, a.Mode)
	assert.Equal(t, 0, a.Height, "within q's own nominal quota")
}

// Between two flavors that both need preemption and equal borrowing, one
// counts as reclaiming only when the queue's usage with the request stays
// within its nominal quota: a queue using 4 of its 8 A100 asking 8 more
// does not reclaim, so the first flavor in order is kept.
func TestAssignPreemptionPastNominalIsNoReclaim(t *testing.T) {
	tr := mustTree(t, quota.Spec{
		Flavors: []string{"H100", "A100"},
		Nodes: []quota.NodeSpec{
			{Name: "all", Kind: quota.Cohort},
			{Name: "q", Parent: "all", Kind: quota.Queue, Preemption: quota.Rules{ReclaimWithinCohort: quota.ReclaimAny},
				Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 8}, {Flavor: "A100", Nominal: 8}}},
			{Name: "r", Parent: "all", Kind: quota.Queue,
				Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 16}, {Flavor: "A100", Nominal: 16}}},
		},
	})
	q, _ := tr.Node("q")
	r, _ := tr.Node("r")
	h100, _ := tr.Flavor("H100")
	a100, _ := tr.Flavor("A100")
	require.NoError(t, tr.AddUsage(q, h100, 20))
	require.NoError(t, tr.AddUsage(r, h100, 4))
	require.NoError(t, tr.AddUsage(q, a100, 4))
	require.NoError(t, tr.AddUsage(r, a100, 20))
	a := tr.Assign(q, []quota.PodSetRequest{{MilliGPUs: 8000}}, quota.AssignOptions{})
	assert.Equal(t, quota.AssignPreempt, a.Mode)
	assert.Equal(t, h100, a.PodSets[0][0].Flavor)
}

func TestAssignAcceptsOnlyTheGPUModelsAPodSetRunsOn(t *testing.T) {
	tr := mustTree(t, groupSpec(quota.Fungibility{}))
	q, _ := tr.Node("q")
	f := ids(t, tr, "A100")
	a := tr.Assign(q, []quota.PodSetRequest{{MilliGPUs: 8000, GPUFlavors: f}}, quota.AssignOptions{})
	assert.Equal(t, f[0], a.PodSets[0][0].Flavor)
	b := tr.Assign(q, []quota.PodSetRequest{{MilliGPUs: 8000, GPUFlavors: []quota.FlavorID{}}}, quota.AssignOptions{})
	assert.Equal(t, quota.AssignNoFit, b.Mode)
	assert.Equal(t, quota.ReasonNotServed, b.Why.Reason.Kind)
}

func TestAssignRefusesAResourceNoGroupCovers(t *testing.T) {
	s := groupSpec(quota.Fungibility{})
	s.Resources = append(s.Resources, "disk")
	tr := mustTree(t, s)
	q, _ := tr.Node("q")
	disk, _ := tr.Resource("disk")
	a := tr.Assign(q, []quota.PodSetRequest{{Resources: []quota.Amount{{Resource: disk, Value: 1}}}}, quota.AssignOptions{})
	assert.Equal(t, quota.AssignNoFit, a.Mode)
	assert.Equal(t, -1, a.FailedGroup)
	z := tr.Assign(q, []quota.PodSetRequest{{Resources: []quota.Amount{{Resource: disk, Value: 0}}}}, quota.AssignOptions{})
	assert.Equal(t, quota.AssignFit, z.Mode, "asking 0 of it is fine, as in Kueue")
}

func TestAssignWithoutGroupsChargesEverythingToTheGPUFlavor(t *testing.T) {
	s := groupSpec(quota.Fungibility{})
	tr := mustTree(t, s)
	lender, _ := tr.Node("lender")
	cpu, _ := tr.Resource("cpu")
	a := tr.Assign(lender, []quota.PodSetRequest{{MilliGPUs: 8000, Resources: []quota.Amount{{Resource: cpu, Value: 1000}}}}, quota.AssignOptions{})
	assert.Equal(t, quota.AssignNoFit, a.Mode, "H100's entry of the lender has no cpu quota, and one flavor takes both")
	d, _ := tr.Flavor("default")
	b := tr.Assign(lender, []quota.PodSetRequest{{Resources: []quota.Amount{{Resource: cpu, Value: 1000}}}}, quota.AssignOptions{})
	assert.Equal(t, d, b.PodSets[0][0].Flavor)
}

// A workload's charge is exactly its requests, resource by resource, and
// a Fit assignment charged never takes a flavor above what the queue may
// hold: nominal plus borrowing limit, and the root's quota.
func TestAssignPropertiesChargeEqualsRequestsAndFitStaysWithinLimits(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := groupSpec(quota.Fungibility{
			WhenCanBorrow:  quota.WhenCanBorrow(rapid.IntRange(0, 1).Draw(rt, "borrow")),
			WhenCanPreempt: quota.WhenCanPreempt(rapid.IntRange(0, 1).Draw(rt, "preempt")),
		})
		bl := rapid.Int64Range(0, 16).Draw(rt, "bl")
		s.Nodes[1].Quotas[0].BorrowingLimit = quota.LimitOf(bl)
		s.Nodes[1].Quotas[2].Resources[0].BorrowingLimit = quota.LimitOf(bl * 1000)
		tr := mustTree(rt, s)
		q, _ := tr.Node("q")
		cpu, _ := tr.Resource("cpu")
		mem, _ := tr.Resource("memory")
		for range rapid.IntRange(1, 12).Draw(rt, "workloads") {
			var sets []quota.PodSetRequest
			want := map[quota.ResourceID]int64{}
			for range rapid.IntRange(1, 3).Draw(rt, "podsets") {
				ps := quota.PodSetRequest{MilliGPUs: 1000 * rapid.Int64Range(0, 8).Draw(rt, "gpus")}
				if c := rapid.Int64Range(0, 40000).Draw(rt, "cpu"); c > 0 {
					ps.Resources = append(ps.Resources, quota.Amount{Resource: cpu, Value: c})
				}
				if rapid.Bool().Draw(rt, "mem") {
					ps.Resources = append(ps.Resources, quota.Amount{Resource: mem, Value: 1 << 20})
				}
				want[quota.GPU] += ps.MilliGPUs
				for _, r := range ps.Resources {
					want[r.Resource] += r.Value
				}
				sets = append(sets, ps)
			}
			a := tr.Assign(q, sets, quota.AssignOptions{})
			if a.Mode != quota.AssignFit {
				continue
			}
			got := map[quota.ResourceID]int64{}
			for _, c := range a.Charges {
				got[c.Resource] += c.Value
			}
			for r, v := range want {
				if v == 0 {
					delete(want, r)
				}
			}
			if len(want) == 0 {
				want = map[quota.ResourceID]int64{}
			}
			require.Equal(rt, want, got, "charge equals requests per resource")
			require.NoError(rt, tr.AddCharges(q, a.Charges))
			for f := range quota.FlavorID(tr.NumFlavors()) {
				for _, r := range []quota.ResourceID{quota.GPU, cpu, mem} {
					if !tr.ServesResource(q, f, r) {
						continue
					}
					u := tr.UsageOf(q, f, r)
					require.LessOrEqual(rt, u, tr.PotentialOf(q, f, r), "flavor %d resource %d above what the queue may ever hold", f, r)
					if f == 0 && r == quota.GPU {
						require.LessOrEqual(rt, u, (8+bl)*1000, "H100 above nominal + borrowing limit")
					}
					if f == 2 && r == cpu {
						require.LessOrEqual(rt, u, 64000+bl*1000, "default cpu above nominal + borrowing limit")
					}
				}
			}
		}
	})
}

// With one group (none declared), the assigner agrees with FitsRequest,
// the fit check the scheduler uses: the flavor chosen is Fit exactly when
// FitsRequest fits there, with the same borrowing height, Preempt only
// within the queue's Potential, and with Borrow and Preempt (stop at the
// first usable flavor) no earlier flavor fits.
func TestAssignPropertyOneGroupAgreesWithFitsRequest(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		lim := func(label string) quota.Limit {
			if rapid.Bool().Draw(rt, label+"set") {
				return quota.LimitOf(rapid.Int64Range(0, 8).Draw(rt, label))
			}
			return quota.Limit{}
		}
		spec := quota.Spec{Flavors: []string{"a", "b", "c"}, Nodes: []quota.NodeSpec{{Name: "root", Kind: quota.Cohort}}}
		for _, name := range []string{"q", "r"} {
			n := quota.NodeSpec{Name: name, Parent: "root", Kind: quota.Queue,
				FlavorFungibility: quota.Fungibility{WhenCanPreempt: quota.Preempt}}
			for _, f := range spec.Flavors {
				fq := quota.FlavorQuota{Flavor: f, Nominal: rapid.Int64Range(0, 8).Draw(rt, "nominal"), BorrowingLimit: lim("bl")}
				if ll := lim("ll"); !ll.IsZero() {
					if v, _ := ll.Get(); v <= fq.Nominal {
						fq.LendingLimit = ll
					}
				}
				n.Quotas = append(n.Quotas, fq)
			}
			spec.Nodes = append(spec.Nodes, n)
		}
		tr := mustTree(rt, spec)
		q, _ := tr.Node("q")
		r, _ := tr.Node("r")
		for f := range quota.FlavorID(3) {
			for _, n := range []quota.NodeID{q, r} {
				if room := tr.Available(n, f); room > 0 {
					require.NoError(rt, tr.AddUsage(n, f, rapid.Int64Range(0, room).Draw(rt, "use")))
				}
			}
		}
		gpus := rapid.Int64Range(1, 12).Draw(rt, "gpus")
		req := quota.Request{MilliGPUs: gpus * 1000}
		a := tr.Assign(q, []quota.PodSetRequest{{MilliGPUs: req.MilliGPUs}}, quota.AssignOptions{})
		if a.Mode == quota.AssignNoFit {
			for f := range quota.FlavorID(3) {
				require.False(rt, tr.FitsRequest(q, f, req).Fits(), "NoFit but %d fits", f)
			}
			return
		}
		got := a.PodSets[0][0]
		v := tr.FitsRequest(q, got.Flavor, req)
		require.Equal(rt, v.Fits(), got.Mode == quota.AssignFit, "Fit as FitsRequest says")
		if v.Fits() {
			require.Equal(rt, v.Height, got.Height, "same borrowing height")
		} else {
			require.LessOrEqual(rt, gpus, tr.Potential(q, got.Flavor), "Preempt only below Potential")
		}
		for f := range got.Flavor {
			require.False(rt, tr.FitsRequest(q, f, req).Fits(), "an earlier flavor %d fits", f)
		}
	})
}

func TestLiveEditsOfANodeWithResourceGroups(t *testing.T) {
	s := groupSpec(quota.Fungibility{})
	s.Flavors = append(s.Flavors, "B200")
	tr := mustTree(t, s)
	q, _ := tr.Node("q")
	cpu, _ := tr.Resource("cpu")
	h100, _ := tr.Flavor("H100")
	b200, _ := tr.Flavor("B200")
	def, _ := tr.Flavor("default")
	require.NoError(t, tr.AddCharges(q, []quota.Charge{{Flavor: def, Resource: cpu, Value: 1000}}))

	// SetQuota edits a served flavor in place, and refuses a new one: only
	// SetNode can put a flavor in a group.
	require.NoError(t, tr.SetQuota(q, quota.FlavorQuota{Flavor: "H100", Nominal: 4}))
	assert.Equal(t, int64(4), tr.Nominal(q, h100))
	err := tr.SetQuota(q, quota.FlavorQuota{Flavor: "B200", Nominal: 8})
	assert.ErrorIs(t, err, quota.ErrResourceGroup)
	assert.False(t, tr.Serves(q, b200), "refused whole")

	n := tr.Spec().Nodes[1]
	n.Quotas = append(n.Quotas, quota.FlavorQuota{Flavor: "B200", Nominal: 8})
	n.ResourceGroups[0].Flavors = []string{"B200", "H100", "A100"}
	require.NoError(t, tr.SetNode(n))
	assert.Equal(t, ids(t, tr, "B200", "H100", "A100"), tr.GroupFlavors(q, 0))
	a := tr.Assign(q, []quota.PodSetRequest{{MilliGPUs: 8000}}, quota.AssignOptions{})
	assert.Equal(t, b200, a.PodSets[0][0].Flavor, "the new first flavor")
	assert.Equal(t, int64(1000), tr.UsageOf(q, def, cpu), "usage is kept")
	assert.Equal(t, n.ResourceGroups, tr.Spec().Nodes[1].ResourceGroups)

	// Dropping the groups gives back the implicit one, in quota order.
	n.ResourceGroups = nil
	for i := range n.Quotas {
		n.Quotas[i].Resources = nil
	}
	err = tr.SetNode(n)
	assert.ErrorIs(t, err, quota.ErrFlavorRemoved, "default's cpu is served: its entry must stay")
	n = tr.Spec().Nodes[1]
	n.ResourceGroups = nil
	require.NoError(t, tr.SetNode(n))
	assert.False(t, tr.HasResourceGroups(q))
	assert.Equal(t, ids(t, tr, "H100", "A100", "default", "spot", "B200"), tr.GroupFlavors(q, 0))
}

func TestACloneKeepsItsResourceGroupsWhenTheOriginalIsEdited(t *testing.T) {
	tr := mustTree(t, groupSpec(quota.Fungibility{}))
	c := tr.Clone()
	n := tr.Spec().Nodes[1]
	n.ResourceGroups[1].Flavors = []string{"spot", "default"}
	require.NoError(t, tr.SetNode(n))
	q, _ := tr.Node("q")
	assert.Equal(t, ids(t, tr, "spot", "default"), tr.GroupFlavors(q, 1))
	assert.Equal(t, ids(t, tr, "default", "spot"), c.GroupFlavors(q, 1), "the clone is not edited")
	lender, _ := tr.Node("lender")
	require.NoError(t, c.SetQuota(lender, quota.FlavorQuota{Flavor: "A100", Nominal: 2}))
	assert.Equal(t, ids(t, tr, "H100", "default", "A100"), c.GroupFlavors(lender, 0))
	assert.Equal(t, ids(t, tr, "H100", "default"), tr.GroupFlavors(lender, 0), "nor is the original")
	c.CopyTo(tr)
	assert.Equal(t, c.Spec(), tr.Spec())
}
