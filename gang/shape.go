package gang

import (
	"fmt"
	"strconv"
)

// Shape is the kind of work a workload is. It drives policy elsewhere:
// inference wants latency and is rarely preempted, training wants whole
// nodes close together, batch fills what is left and yields first.
//
// The zero Shape is unset and refused by [Workload.Validate]: every
// workload says what it is. In JSON a Shape is its name ("training").
type Shape uint8

// The shapes of the design.
const (
	// Inference is a service replica: 1 to a node's GPUs, long-running.
	Inference Shape = iota + 1
	// Training is a gang of many pods that must all run at once.
	Training
	// Batch is elastic, preemptible filler work (evals, embeddings).
	Batch
)

// String returns the shape's name, or "Shape(n)" for an unknown value.
func (s Shape) String() string {
	switch s {
	case Inference:
		return "inference"
	case Training:
		return "training"
	case Batch:
		return "batch"
	}
	return "Shape(" + strconv.Itoa(int(s)) + ")"
}

// Valid reports whether s is one of the shapes.
func (s Shape) Valid() bool { return s >= Inference && s <= Batch }

// MarshalText encodes a known shape by name and the unset shape as the
// empty text (records such as node events carry no shape); unknown shapes
// are refused so that JSON never carries a name that does not parse back.
func (s Shape) MarshalText() ([]byte, error) {
	if s == 0 {
		return []byte{}, nil
	}
	if !s.Valid() {
		return nil, fmt.Errorf("%w: cannot encode %v", ErrInvalid, s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText decodes a shape name. The empty text decodes to the unset
// shape, which Validate then refuses with a field path.
func (s *Shape) UnmarshalText(text []byte) error {
	switch string(text) {
	case "":
		*s = 0
	case "inference":
		*s = Inference
	case "training":
		*s = Training
	case "batch":
		*s = Batch
	default:
		return fmt.Errorf("%w: unknown shape %q (want inference, training or batch)", ErrInvalid, text)
	}
	return nil
}
