package gang_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
)

// wide returns a valid workload of n one-GPU pod sets.
func wide(n int) gang.Workload {
	w := gang.Workload{ID: "wide", Queue: "research", Shape: gang.Batch, PodSets: make([]gang.PodSet, n)}
	for i := range w.PodSets {
		w.PodSets[i] = gang.PodSet{Name: "ps-" + strconv.Itoa(i), Count: 1, GPUsPerPod: 1}
	}
	return w
}

// TestValidateNamesTheFirstDuplicateInLongLists: long lists are checked
// with an index instead of pairwise, and say the same thing: the first
// element that repeats an earlier one, and the first earlier one.
func TestValidateNamesTheFirstDuplicateInLongLists(t *testing.T) {
	for _, tt := range []struct {
		name  string
		edit  func(w *gang.Workload)
		field string
		dup   string
	}{
		{"pod set, short list", func(w *gang.Workload) { *w = wide(3); w.PodSets[2].Name = "ps-0" },
			"podSets[2].name", "podSets[0].name"},
		{"pod set, long list", func(w *gang.Workload) {
			*w = wide(40000)
			w.PodSets[30000].Name, w.PodSets[35000].Name = "ps-17", "ps-17"
		}, "podSets[30000].name", "podSets[17].name"},
		{"pool, long list", func(w *gang.Workload) {
			for i := range 40 {
				w.Pools = append(w.Pools, "pool-"+strconv.Itoa(i))
			}
			w.Pools[39] = "pool-20"
		}, "pools[39]", "pools[20]"},
		{"flavor, long list", func(w *gang.Workload) {
			for i := range 20 {
				w.Flavors = append(w.Flavors, "f"+strconv.Itoa(i))
			}
			w.Flavors[19] = "f3"
		}, "flavors[19]", "flavors[3]"},
		{"resource, long list", func(w *gang.Workload) {
			for i := range 30 {
				w.PodSets[0].Resources = append(w.PodSets[0].Resources, gang.Resource{Name: "r" + strconv.Itoa(i), Amount: 1})
			}
			w.PodSets[0].Resources[25].Name = "r2"
		}, "podSets[0].resources[25].name", "resources[2].name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := wide(2)
			tt.edit(&w)
			err := w.Validate()
			var fe *gang.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tt.field, fe.Field)
			assert.Contains(t, fe.Detail, tt.dup)
		})
	}
}

// TestValidateAcceptsManyPodSets: a workload of 100,000 distinct pod sets
// is valid.
func TestValidateAcceptsManyPodSets(t *testing.T) {
	w := wide(100000)
	assert.NoError(t, w.ValidateFor([]string{"spine", "leaf", "node"}, 8))
}
