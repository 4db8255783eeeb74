package fleet

// CheckInvariants lets the external tests check the ledger after every
// step.
func (s *Scheduler) CheckInvariants() error { return s.books.CheckInvariants() }
