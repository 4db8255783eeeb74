package kueue

import (
	"errors"
	"fmt"
)

// Sentinel errors; every error of the package is an *ObjectError wrapping
// one of them (or a quota sentinel for rules the quota tree enforces), or
// several joined with errors.Join when several objects are wrong.
var (
	ErrSyntax        = errors.New("kueue: malformed document")
	ErrVersion       = errors.New("kueue: unsupported API version")
	ErrNoName        = errors.New("kueue: object without a name")
	ErrDuplicate     = errors.New("kueue: duplicate object")
	ErrNameClash     = errors.New("kueue: a Cohort and a ClusterQueue share a name")
	ErrInvalid       = errors.New("kueue: invalid field")
	ErrQuantity      = errors.New("kueue: invalid quantity")
	ErrCycle         = errors.New("kueue: cohort cycle")
	ErrCannotExport  = errors.New("kueue: quota tree cannot be written as Kueue objects")
	ErrInvalidOption = errors.New("kueue: invalid options")
)

// ObjectError names the object and field a refusal is about: the
// document's index in the file (0-based) and its first line, the kind and
// name, and the field path.
type ObjectError struct {
	Doc    int    // the document's index, from 0
	Line   int    // its first line, from 1
	Kind   string // the object's kind
	Name   string // its name
	Field  string // the field path
	Detail string // what is wrong, in words
	Err    error  // one of the sentinels
}

// Error says what was refused, where, and why.
func (e *ObjectError) Error() string {
	msg := e.Err.Error()
	if e.Line > 0 {
		msg += fmt.Sprintf(": line %d", e.Line)
	}
	if e.Kind != "" || e.Name != "" {
		msg += fmt.Sprintf(": %s %q", e.Kind, e.Name)
	}
	if e.Field != "" {
		msg += ": " + e.Field
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the wrapped sentinel, for errors.Is and errors.As.
func (e *ObjectError) Unwrap() error { return e.Err }

// Note records something read but not turned into quota: a skipped kind,
// a field or resource fleet does not model, an implicit cohort, a rounded
// quantity. Nothing in the file is dropped without one.
type Note struct {
	Line   int    // the line, from 1
	Kind   string // the object's kind
	Name   string // its name
	Detail string // what was not turned into quota, and why
}

// String renders the note as one line: where, and what.
func (n Note) String() string {
	s := "note"
	if n.Line > 0 {
		s += fmt.Sprintf(": line %d", n.Line)
	}
	if n.Kind != "" || n.Name != "" {
		s += fmt.Sprintf(": %s %q", n.Kind, n.Name)
	}
	return s + ": " + n.Detail
}
