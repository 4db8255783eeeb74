package preempt

// SetNoBounds makes s try every domain without pruning by lower bounds,
// the reference the pruned search must agree with.
func SetNoBounds(s *Searcher, v bool) { s.noBounds = v }
