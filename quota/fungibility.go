package quota

// Fungibility is Kueue's flavorFungibility of a ClusterQueue, for
// workloads that accept several flavors (GPU models, or the flavors of a
// resource group): when a flavor fits only by borrowing, or only by
// preempting, whether to take it or to look at the next flavor first.
type Fungibility struct {
	WhenCanBorrow WhenCanBorrow `json:"whenCanBorrow,omitzero"` // which flavors to try when borrowing: Borrow (any that fits) or TryNextFlavor
	// WhenCanPreempt is what Assign does with a flavor that fits only by
	// preempting: TryNextFlavor (the default, as in Kueue) looks at the
	// next flavors and comes back to it if none fits better; Preempt
	// stops there.
	WhenCanPreempt WhenCanPreempt `json:"whenCanPreempt,omitzero"`
}

// WhenCanPreempt says what a queue does with a flavor that fits only by
// preempting.
type WhenCanPreempt uint8

const (
	// PreemptTryNextFlavor (the default, as in Kueue) tries the next
	// flavors before preempting in this one.
	PreemptTryNextFlavor WhenCanPreempt = iota
	// Preempt stops the search at the first flavor where preemption can
	// make room (Kueue's Preempt, MayStopSearch in v1beta2).
	Preempt
)

func whenCanPreemptNames() []string { return []string{"TryNextFlavor", "Preempt"} }

// Valid reports whether w is one of the declared values.
func (w WhenCanPreempt) Valid() bool { return int(w) < len(whenCanPreemptNames()) }

// String returns the when can preempt's name, as specs and messages spell it.
func (w WhenCanPreempt) String() string {
	return enumString(whenCanPreemptNames(), uint8(w), "WhenCanPreempt")
}

// MarshalText encodes the when can preempt as its name, for JSON and YAML.
func (w WhenCanPreempt) MarshalText() ([]byte, error) {
	return enumMarshal(whenCanPreemptNames(), uint8(w), "WhenCanPreempt")
}

// UnmarshalText decodes a name as MarshalText writes it.
func (w *WhenCanPreempt) UnmarshalText(b []byte) error {
	v, err := enumUnmarshal(whenCanPreemptNames(), b, "flavorFungibility.whenCanPreempt")
	*w = WhenCanPreempt(v)
	return err
}

// WhenCanBorrow says what a queue does with a flavor that fits only by
// borrowing.
type WhenCanBorrow uint8

const (
	// Borrow (the default, as in Kueue) takes any flavor that fits,
	// borrowing or not.
	Borrow WhenCanBorrow = iota
	// TryNextFlavor prefers the flavors that fit within nominal quota;
	// borrowing is used only when none does.
	TryNextFlavor
)

func whenCanBorrowNames() []string { return []string{"Borrow", "TryNextFlavor"} }

// Valid reports whether w is one of the declared values.
func (w WhenCanBorrow) Valid() bool { return int(w) < len(whenCanBorrowNames()) }

// String returns the when can borrow's name, as specs and messages spell it.
func (w WhenCanBorrow) String() string {
	return enumString(whenCanBorrowNames(), uint8(w), "WhenCanBorrow")
}

// MarshalText encodes the when can borrow as its name, for JSON and YAML.
func (w WhenCanBorrow) MarshalText() ([]byte, error) {
	return enumMarshal(whenCanBorrowNames(), uint8(w), "WhenCanBorrow")
}

// UnmarshalText decodes a name as MarshalText writes it.
func (w *WhenCanBorrow) UnmarshalText(b []byte) error {
	v, err := enumUnmarshal(whenCanBorrowNames(), b, "flavorFungibility.whenCanBorrow")
	*w = WhenCanBorrow(v)
	return err
}

// Fungibility returns a queue's flavor fungibility.
func (t *Tree) Fungibility(q NodeID) Fungibility { return t.fungibility[q] }
