// Package topology is the physical tree of a GPU fleet: levels such as
// spine > leaf switch > node, each node's GPUs, flavor, pool and health,
// and per-domain aggregates kept exact on every change.
//
// It holds no policy: it does not decide where work goes (package
// placement does) or who is evicted (package preempt does). It answers
// "how much is free, and where" fast enough to be asked inside every
// scheduling decision:
//
//   - every domain keeps free GPUs, fully free ("whole") nodes, healthy
//     nodes and GPUs, stranded GPUs and a histogram of nodes by free-GPU
//     count, updated in O(depth) per Allocate, Release or SetHealth;
//   - ordered indexes (domains by free whole nodes and by free GPUs per
//     level, nodes by free GPUs) give best-fit look-ups in O(log n);
//   - Clone is a cheap independent copy for what-if simulations;
//   - Batch runs a series of changes and moves each ordered-index key
//     once at its end, so freeing several nodes of one leaf (a victim
//     plan on a scratch copy) moves the leaf and its ancestors once.
//
// Nodes and domains are small integer IDs over flat slices; names are for
// people and look-ups. The nodes below any domain are a contiguous ID
// range, so membership is a range check.
//
// Fleets are partitioned into groups by (flavor, pool): a gang never mixes
// GPU models or pools, so every aggregate and index exists per group, and
// Stats can also sum over AllGroups.
//
// A Fleet is not safe for concurrent use. The host (or the root
// scheduler) owns it and serialises calls:
//
//	f, err := topology.New(topology.Reference()) // 4 x 8 x 8 x 8 = 2,048 H100
//	n, _ := f.Node("node-0-0-0")
//	err = f.Allocate(n, 8)       // a whole-node pod starts
//	fmt.Print(f)                 // the occupancy map
//	err = f.Release(n, 8)        // it ends
//	err = f.SetHealth(n, topology.Down)
package topology
