package slurm

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// MaxFileSize bounds the topology files the package reads, so a parser fed
// arbitrary input finishes quickly.
const MaxFileSize = 16 << 20

// maxNameLen is Slurm's HOST_NAME_MAX for switch and block names.
const maxNameLen = 64

// switchRec is one SwitchName line (or topology.yaml switch).
type switchRec struct {
	line      int
	name      string
	switches  []string // child switch names
	nodes     []string // child node names
	linkSpeed uint32
	hasSpeed  bool
}

// blockRec is one BlockName line (or topology.yaml block).
type blockRec struct {
	line  int
	name  string
	nodes []string
}

// desc is a parsed topology file before it becomes a fleet.
type desc struct {
	switches  []switchRec
	blocks    []blockRec
	sizes     []int // BlockSizes, node counts; nil when absent
	levels    []int // BlockLevels exponents; nil when absent
	sizesLine int
	hosts     int // names expanded so far, bounded by MaxFileHosts
}

// parseConf reads topology.conf: one record per line, "key=value" pairs
// separated by blanks, keys case-insensitive, '#' to the end of the line a
// comment, a trailing '\' joining the next line.
func parseConf(data []byte) (*desc, error) {
	if len(data) > MaxFileSize {
		return nil, &ParseError{Detail: fmt.Sprintf("file larger than %d bytes", MaxFileSize), Err: ErrSyntax}
	}
	d := &desc{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxFileSize+1)
	lineNo, start := 0, 0
	var pending strings.Builder
	for sc.Scan() {
		lineNo++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		if pending.Len() == 0 {
			start = lineNo
		}
		if t := strings.TrimRight(text, " \t\r"); strings.HasSuffix(t, "\\") {
			pending.WriteString(strings.TrimSuffix(t, "\\"))
			pending.WriteByte(' ')
			continue
		}
		pending.WriteString(text)
		line := pending.String()
		pending.Reset()
		if err := d.addLine(line, start); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &ParseError{Line: lineNo + 1, Detail: err.Error(), Err: ErrSyntax}
	}
	if pending.Len() > 0 {
		if err := d.addLine(pending.String(), start); err != nil {
			return nil, err
		}
	}
	return d, nil
}

type pair struct{ key, val string }

// fields splits a line into key=value pairs; a value may be double-quoted.
func fields(line string, lineNo int) ([]pair, error) {
	var out []pair
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
			i++
		}
		if i == len(line) {
			return out, nil
		}
		eq := strings.IndexByte(line[i:], '=')
		sp := strings.IndexAny(line[i:], " \t")
		if eq < 0 || (sp >= 0 && sp < eq) {
			end := len(line)
			if sp >= 0 {
				end = i + sp
			}
			return nil, &ParseError{Line: lineNo, Detail: fmt.Sprintf("%q is not key=value", line[i:end]), Err: ErrSyntax}
		}
		key := line[i : i+eq]
		i += eq + 1
		var val string
		if i < len(line) && line[i] == '"' {
			end := strings.IndexByte(line[i+1:], '"')
			if end < 0 {
				return nil, &ParseError{Line: lineNo, Detail: "unterminated quote after " + key, Err: ErrSyntax}
			}
			val = line[i+1 : i+1+end]
			i += end + 2
		} else {
			j := i
			for j < len(line) && line[j] != ' ' && line[j] != '\t' && line[j] != '\r' {
				j++
			}
			val = line[i:j]
			i = j
		}
		out = append(out, pair{strings.ToLower(key), val})
	}
}

func (d *desc) addLine(line string, lineNo int) error {
	ps, err := fields(line, lineNo)
	if err != nil || len(ps) == 0 {
		return err
	}
	switch ps[0].key {
	case "switchname":
		return d.addSwitch(ps, lineNo)
	case "blockname":
		return d.addBlock(ps, lineNo)
	case "blocksizes", "blocklevels":
		return d.addSizes(ps, lineNo)
	case "ringname":
		// topology/ring's record: a known topology fleet cannot read, as
		// topology.yaml's ring is, not an unknown key.
		return &ParseError{Line: lineNo, Name: ps[0].val, Detail: "ring topologies (RingName) are not level trees", Err: ErrUnsupported}
	}
	return &ParseError{Line: lineNo, Detail: fmt.Sprintf("record starts with %q", ps[0].key), Err: ErrUnknownKey}
}

func checkName(name string, lineNo int) error {
	if name == "" {
		return &ParseError{Line: lineNo, Err: ErrNoName}
	}
	if len(name) > maxNameLen {
		return &ParseError{Line: lineNo, Name: name, Err: ErrNameTooLong}
	}
	return nil
}

// expand expands a hostlist of the record on lineNo named name, within
// what is left of the file's MaxFileHosts. The *ParseError wraps the
// *HostlistError, so errors.Is finds ErrHostlist or ErrTooManyHosts and
// errors.As the expression and offset.
func (d *desc) expand(expr string, lineNo int, name string) ([]string, error) {
	hosts, err := expandHostlist(expr, min(MaxHosts, MaxFileHosts-d.hosts))
	if err != nil {
		if err.Err == ErrTooManyHosts {
			err.Detail = fmt.Sprintf("the file's hostlists name more than %d hosts (%d before this one)", MaxFileHosts, d.hosts)
		}
		return nil, &ParseError{Line: lineNo, Name: name, Err: err}
	}
	d.hosts += len(hosts)
	return hosts, nil
}

func (d *desc) addSwitch(ps []pair, lineNo int) error {
	s := switchRec{line: lineNo, name: ps[0].val}
	if err := checkName(s.name, lineNo); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, p := range ps[1:] {
		if seen[p.key] {
			return &ParseError{Line: lineNo, Name: s.name, Detail: "key " + p.key + " given twice", Err: ErrSyntax}
		}
		seen[p.key] = true
		var err error
		switch p.key {
		case "switches":
			s.switches, err = d.expand(p.val, lineNo, s.name)
		case "nodes":
			s.nodes, err = d.expand(p.val, lineNo, s.name)
		case "linkspeed":
			v, perr := strconv.ParseUint(p.val, 10, 32)
			if perr != nil {
				return &ParseError{Line: lineNo, Name: s.name, Detail: "LinkSpeed=" + p.val, Err: ErrSyntax}
			}
			s.linkSpeed, s.hasSpeed = uint32(v), true
		default:
			return &ParseError{Line: lineNo, Name: s.name, Detail: p.key, Err: ErrUnknownKey}
		}
		if err != nil {
			return err
		}
	}
	if seen["switches"] && seen["nodes"] {
		return &ParseError{Line: lineNo, Name: s.name, Err: ErrMixed}
	}
	d.switches = append(d.switches, s)
	return nil
}

func (d *desc) addBlock(ps []pair, lineNo int) error {
	b := blockRec{line: lineNo, name: ps[0].val}
	if err := checkName(b.name, lineNo); err != nil {
		return err
	}
	for i, p := range ps[1:] {
		if p.key != "nodes" || i > 0 {
			return &ParseError{Line: lineNo, Name: b.name, Detail: p.key, Err: ErrUnknownKey}
		}
		var err error
		if b.nodes, err = d.expand(p.val, lineNo, b.name); err != nil {
			return err
		}
	}
	d.blocks = append(d.blocks, b)
	return nil
}

// addSizes reads BlockSizes (node counts) or the older BlockLevels
// (exponents of the base block count, as single values or lo-hi ranges).
func (d *desc) addSizes(ps []pair, lineNo int) error {
	if len(ps) != 1 {
		return &ParseError{Line: lineNo, Detail: ps[1].key + " after " + ps[0].key, Err: ErrUnknownKey}
	}
	if d.sizes != nil || d.levels != nil {
		return &ParseError{Line: lineNo, Detail: "BlockSizes or BlockLevels given twice", Err: ErrBlockSizes}
	}
	d.sizesLine = lineNo
	bad := &ParseError{Line: lineNo, Detail: ps[0].key + "=" + ps[0].val, Err: ErrBlockSizes}
	for part := range strings.SplitSeq(ps[0].val, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return bad
		}
		if ps[0].key == "blocksizes" {
			if isRange || a <= 0 {
				return bad
			}
			d.sizes = append(d.sizes, a)
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return bad
			}
		}
		if b > 15 {
			return bad
		}
		for k := a; k <= b; k++ {
			d.levels = append(d.levels, k)
		}
	}
	return nil
}
