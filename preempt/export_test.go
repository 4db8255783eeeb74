package preempt

// SetNoBounds makes s try every domain without pruning by lower bounds,
// the reference the pruned search must agree with.
func SetNoBounds(s *Searcher, v bool) { s.noBounds = v }

// SortKeys orders candidates given by their packed criteria k and cost
// keys, in index order, as sortCandidates does when running came sorted
// by ID, and returns their indexes in that order.
func SortKeys(s *Searcher, k, cost []uint64) []int32 {
	keys := make([]sortKey, len(k))
	for i := range k {
		keys[i] = sortKey{k: k[i], cost: cost[i], i: int32(i)}
	}
	keys = s.radixSortKeys(keys)
	out := make([]int32, len(keys))
	for j, x := range keys {
		out[j] = x.i
	}
	return out
}
