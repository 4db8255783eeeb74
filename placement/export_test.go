package placement

// SetVisitLimit makes p's one-pod walks read at most n index entries per
// capacity class (0: the default bounds), so that tests reach the
// fallback that scans every node with small fleets.
func SetVisitLimit(p *Placer, n int) { p.visitLimit = n }
