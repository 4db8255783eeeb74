package ledger

import (
	"slices"
	"strings"
)

// recordList is a set of records kept in ID order: read in order without
// a sort, found by binary search.
type recordList []*Record

// find is where the record id is, or would be.
func (s recordList) find(id string) (int, bool) {
	return slices.BinarySearchFunc(s, id, func(r *Record, id string) int { return strings.Compare(r.W.ID, id) })
}

// get is the record id, or nil.
func (s recordList) get(id string) *Record {
	if i, ok := s.find(id); ok {
		return s[i]
	}
	return nil
}

// add puts r in the set, in place of a record of its ID.
func (s *recordList) add(r *Record) {
	if i, ok := s.find(r.W.ID); ok {
		(*s)[i] = r
	} else {
		*s = slices.Insert(*s, i, r)
	}
}

// remove takes the record id out of the set, if it is there.
func (s *recordList) remove(id string) {
	if i, ok := s.find(id); ok {
		*s = slices.Delete(*s, i, i+1)
	}
}

// ordered reports whether the set is in strict ID order, as find needs.
func (s recordList) ordered() bool {
	for i := 1; i < len(s); i++ {
		if s[i-1].W.ID >= s[i].W.ID {
			return false
		}
	}
	return true
}
