package slurm

import (
	"strconv"
	"strings"
)

// Limits of the hostlist expander. MaxRange and MaxPrefixes are Slurm's own
// (MAX_RANGE and MAX_PREFIX_CNT in hostlist.c); MaxHosts bounds a whole
// expression and MaxFileHosts every expression of one topology file
// together, so that no input can make the expander, or the importer
// behind it, run long or allocate without bound: a few hundred bytes of
// expressions each under MaxHosts would otherwise name millions of nodes.
// MaxFileHosts (switch and node names counted every time they appear) is
// above any cluster on record; the largest, Fugaku, has 158,976 nodes.
const (
	MaxRange     = 1 << 16 // hosts in one lo-hi range
	MaxPrefixes  = 1 << 16 // values of one bracket group before the last
	MaxHosts     = 1 << 20 // hosts of one expression
	MaxFileHosts = 1 << 18 // names of every expression of one file
)

// maxDigits keeps every bound inside uint64 arithmetic with room to spare.
const maxDigits = 18

// ExpandHostlist expands a Slurm hostlist expression into host names, in
// Slurm's order, duplicates kept. The grammar is hostlist.c's:
//
//   - items are separated by runs of spaces, tabs, newlines or commas, but
//     commas inside brackets do not split: "tux[0-3,12] gpu1" is two items;
//   - a name without brackets is literal: "tux0-5" is one host;
//   - "head[ranges]suffix": ranges are comma-separated "lo" or "lo-hi"
//     (decimal, lo <= hi), each printed zero-padded to the number of
//     characters of its lo, so "n[08-10]" is n08 n09 n10 and "n[1-010]" is
//     n1 ... n10; the suffix is the text after the last ']';
//   - bracket groups in the head multiply out, the last group varying
//     fastest, then the head's groups from the first to the last, as
//     Slurm's recursion does: "a[1-2]b[3-4]c[5-6]" is a1b3c5 a1b3c6 a2b3c5
//     a2b3c6 a1b4c5 ...
//
// It refuses, with a *HostlistError wrapping ErrHostlist: an unclosed or
// empty bracket, an empty, signed or non-numeric bound ("n[-1]"), lo > hi,
// a range of more than MaxRange hosts, a bracket group before the last
// with more than MaxPrefixes values (Slurm counts each group, not their
// product); and
// with ErrTooManyHosts an expression of more than MaxHosts hosts.
func ExpandHostlist(expr string) ([]string, error) {
	out, err := expandHostlist(expr, MaxHosts)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// expandHostlist is ExpandHostlist with at most limit hosts.
func expandHostlist(expr string, limit int) ([]string, *HostlistError) {
	var out []string
	err := forEachItem(expr, func(item string, off int) *HostlistError {
		if !strings.Contains(item, "[") {
			if len(out) >= limit {
				return &HostlistError{Expr: expr, Offset: off, Detail: tooMany(limit), Err: ErrTooManyHosts}
			}
			out = append(out, item)
			return nil
		}
		names, err := expandItem(item, limit-len(out))
		if err != nil {
			err.Expr, err.Offset = expr, off
			return err
		}
		out = append(out, names...)
		return nil
	})
	return out, err
}

func tooMany(limit int) string { return "more than " + strconv.Itoa(limit) + " hosts" }

// forEachItem splits expr at separators outside brackets.
func forEachItem(expr string, fn func(item string, off int) *HostlistError) *HostlistError {
	depth, start := 0, -1
	for i := 0; i <= len(expr); i++ {
		sep := i == len(expr)
		if !sep {
			switch c := expr[i]; c {
			case '[':
				depth++
			case ']':
				if depth > 0 {
					depth--
				}
			case ' ', '\t', '\n', '\r', ',':
				sep = depth == 0
			}
		}
		if !sep {
			if start < 0 {
				start = i
			}
			continue
		}
		if i == len(expr) && depth > 0 {
			return &HostlistError{Expr: expr, Offset: max(start, 0), Detail: "'[' without ']'", Err: ErrHostlist}
		}
		if start >= 0 {
			if err := fn(expr[start:i], start); err != nil {
				return err
			}
			start = -1
		}
	}
	return nil
}

// expandItem expands one bracketed name: prefixes of the head (outer loop)
// times the values of the last group (inner loop), then the suffix.
func expandItem(item string, budget int) ([]string, *HostlistError) {
	head, ranges, suffix, err := splitLast(item)
	if err != nil {
		return nil, err
	}
	if strings.Contains(suffix, "]") {
		return nil, &HostlistError{Detail: "']' without '['", Err: ErrHostlist}
	}
	prefixes, err := expandHead(head, budget)
	if err != nil {
		return nil, err
	}
	rs, err := parseRanges(ranges)
	if err != nil {
		return nil, err
	}
	per := 0
	for _, r := range rs {
		per += int(r.hi - r.lo + 1)
	}
	if per > 0 && len(prefixes) > budget/per {
		return nil, &HostlistError{Detail: tooMany(budget), Err: ErrTooManyHosts}
	}
	out := make([]string, 0, len(prefixes)*per)
	for _, p := range prefixes {
		for _, r := range rs {
			for v := r.lo; v <= r.hi; v++ {
				out = append(out, p+pad(v, r.width)+suffix)
			}
		}
	}
	return out, nil
}

// expandHead expands the text before an item's last '[': its own last group
// varies slowest, which is the order Slurm's recursion produces.
func expandHead(head string, budget int) ([]string, *HostlistError) {
	if !strings.Contains(head, "[") {
		if strings.Contains(head, "]") {
			return nil, &HostlistError{Detail: "']' without '['", Err: ErrHostlist}
		}
		return []string{head}, nil
	}
	inner, ranges, mid, err := splitLast(head)
	if err != nil {
		return nil, err
	}
	if strings.Contains(mid, "]") {
		return nil, &HostlistError{Detail: "']' without '['", Err: ErrHostlist}
	}
	rs, err := parseRanges(ranges)
	if err != nil {
		return nil, err
	}
	prefixes, err := expandHead(inner, budget)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, r := range rs {
		n += int(r.hi - r.lo + 1)
	}
	// Slurm bounds the values of each group (prefix_cnt in
	// _push_range_list), not their product; the product is bounded by
	// the host budget, as every prefix gives at least one host.
	if n > MaxPrefixes {
		return nil, &HostlistError{Detail: "a bracket group of more than 65536 prefixes", Err: ErrHostlist}
	}
	if len(prefixes) > budget/n {
		return nil, &HostlistError{Detail: tooMany(budget), Err: ErrTooManyHosts}
	}
	out := make([]string, 0, n*len(prefixes))
	for _, r := range rs {
		for v := r.lo; v <= r.hi; v++ {
			for _, p := range prefixes {
				out = append(out, p+pad(v, r.width)+mid)
			}
		}
	}
	return out, nil
}

// splitLast splits s at its last '[' into head, the range text and the text
// after the matching ']'.
func splitLast(s string) (head, ranges, rest string, err *HostlistError) {
	i := strings.LastIndexByte(s, '[')
	j := strings.IndexByte(s[i:], ']')
	if j < 0 {
		return "", "", "", &HostlistError{Detail: "'[' without ']'", Err: ErrHostlist}
	}
	return s[:i], s[i+1 : i+j], s[i+j+1:], nil
}

type hostRange struct {
	lo, hi uint64
	width  int
}

func parseRanges(s string) ([]hostRange, *HostlistError) {
	if s == "" {
		return nil, &HostlistError{Detail: "empty brackets", Err: ErrHostlist}
	}
	var rs []hostRange
	for part := range strings.SplitSeq(s, ",") {
		loS, hiS, isRange := strings.Cut(part, "-")
		if !isRange {
			hiS = loS
		}
		lo, ok1 := parseBound(loS)
		hi, ok2 := parseBound(hiS)
		if !ok1 || !ok2 {
			return nil, &HostlistError{Detail: "bad range " + strconv.Quote(part), Err: ErrHostlist}
		}
		if lo > hi {
			return nil, &HostlistError{Detail: "range " + strconv.Quote(part) + " has lo > hi", Err: ErrHostlist}
		}
		if hi-lo >= MaxRange {
			return nil, &HostlistError{Detail: "range " + strconv.Quote(part) + " has more than 65536 hosts", Err: ErrHostlist}
		}
		rs = append(rs, hostRange{lo: lo, hi: hi, width: len(loS)})
	}
	return rs, nil
}

func parseBound(s string) (uint64, bool) {
	if s == "" || len(s) > maxDigits {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

func pad(v uint64, width int) string {
	s := strconv.FormatUint(v, 10)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

// CompressHostlist writes names as a hostlist expression that
// ExpandHostlist turns back into exactly names, in the same order. Runs of
// names sharing a prefix and ending in consecutive numbers become bracket
// ranges ("node-0-0-[0-7]"); other names are written as they are. It
// refuses (ErrHostlist) a name that the grammar cannot carry: empty, or
// containing a separator or a bracket.
func CompressHostlist(names []string) (string, error) {
	var b strings.Builder
	type group struct {
		prefix string
		rs     []hostRange
	}
	var g *group
	flush := func() {
		if g == nil {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(g.prefix)
		if len(g.rs) == 1 && g.rs[0].lo == g.rs[0].hi {
			b.WriteString(pad(g.rs[0].lo, g.rs[0].width))
		} else {
			b.WriteByte('[')
			for i, r := range g.rs {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(pad(r.lo, r.width))
				if r.hi > r.lo {
					b.WriteByte('-')
					b.WriteString(pad(r.hi, r.width))
				}
			}
			b.WriteByte(']')
		}
		g = nil
	}
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, "[], \t\n\r") {
			return "", &HostlistError{Expr: n, Detail: "name cannot be written in a hostlist", Err: ErrHostlist}
		}
		k := len(n)
		for k > 0 && n[k-1] >= '0' && n[k-1] <= '9' {
			k--
		}
		digits := n[k:]
		v, ok := parseBound(digits)
		if !ok {
			flush()
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(n)
			continue
		}
		if g != nil && g.prefix == n[:k] {
			last := &g.rs[len(g.rs)-1]
			if v == last.hi+1 && pad(v, last.width) == digits && v-last.lo < MaxRange-1 {
				last.hi = v
				continue
			}
			g.rs = append(g.rs, hostRange{lo: v, hi: v, width: len(digits)})
			continue
		}
		flush()
		g = &group{prefix: n[:k], rs: []hostRange{{lo: v, hi: v, width: len(digits)}}}
	}
	flush()
	return b.String(), nil
}
