package quota

// Fungibility is Kueue's flavorFungibility of a ClusterQueue, for
// workloads that accept several flavors (GPU models): when a flavor fits
// only by borrowing, whether to take it or to look for one that fits
// within nominal quota first.
type Fungibility struct {
	WhenCanBorrow WhenCanBorrow `json:"whenCanBorrow,omitzero"` // which flavors to try when borrowing: Borrow (any that fits) or TryNextFlavor
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
