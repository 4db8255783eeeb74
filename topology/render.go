package topology

import (
	"fmt"
	"io"
	"strings"
)

// NodeRune is how the occupancy map shows one node: its free GPUs as a
// digit ('8' fully free on an 8-GPU node, '0' full; 10-35 free as 'a'-'z',
// more as '+'), 'c' when cordoned, 'x' when down and '-' when absent.
func (f *Fleet) NodeRune(n NodeID) byte {
	switch f.nhealth[n] {
	case Cordoned:
		return 'c'
	case Down:
		return 'x'
	case Absent:
		return '-'
	}
	free := f.ncap[n] - f.nalloc[n]
	switch {
	case free < 10:
		return byte('0' + free)
	case free < 36:
		return byte('a' + free - 10)
	}
	return '+'
}

// Render writes the occupancy map: one line per domain of the level just
// above the nodes (a leaf switch), one character per node (see NodeRune),
// indented under headers for the levels above it, then a summary line.
// A person sees fragmentation at a glance.
func (f *Fleet) Render(w io.Writer) error {
	var b strings.Builder
	f.render(&b, Root)
	s := f.Stats(Root, AllGroups)
	stranded, frac := f.Stranded()
	fmt.Fprintf(&b, "free %d/%d GPUs, %d whole nodes free, stranded %d (%.1f%%)\n",
		s.FreeGPUs, s.HealthyGPUs, s.FreeNodes, stranded, 100*frac)
	_, err := io.WriteString(w, b.String())
	return err
}

func (f *Fleet) render(b *strings.Builder, d DomainID) {
	level := int(f.dom[d].level)
	indent := strings.Repeat("  ", max(level-1, 0))
	if level == f.depth-1 || f.depth == 1 {
		name := f.dom[d].name
		if level == 0 {
			name = "fleet"
		}
		b.WriteString(indent)
		b.WriteString(name)
		b.WriteString("  ")
		lo, hi := f.Nodes(d)
		for n := lo; n < hi; n++ {
			b.WriteByte(f.NodeRune(n))
		}
		b.WriteByte('\n')
		return
	}
	if level > 0 {
		b.WriteString(indent)
		b.WriteString(f.dom[d].name)
		b.WriteByte('\n')
	}
	lo, hi := f.Children(d)
	for c := lo; c < hi; c++ {
		f.render(b, c)
	}
}

// String is the occupancy map of Render.
func (f *Fleet) String() string {
	var b strings.Builder
	_ = f.Render(&b)
	return b.String()
}
