package topology

import "strings"

// MIGProfile is one way to carve a GPU instance out of a MIG-capable GPU:
// how many of the GPU's eight memory slices it occupies, where it may
// start, and how many of its seven compute slices it takes.
//
// A slice is charged (to quota, and in the GPU's thousandths in use) by
// the compute slices it takes, not by a per-profile constant: a slice of
// profile p starting at memory slice s takes compute slices s to
// s+p.Compute-1 (every profile's compute slices lie within its memory
// slices, so slices that do not overlap take different compute slices),
// and compute slice i is charged
//
//	ceil(1000(i+1)/7) - ceil(1000i/7)
//
// thousandths: 143 for compute slices 0 to 5, 142 for slice 6. The
// charges of one GPU's compute slices add up to exactly 1000, so a GPU
// fully carved (seven 1g slices, 4g and 3g, three 2g and a 1g, ...) is
// charged one GPU, and any carving at most one. A slice of c compute
// slices is charged ceil(1000c/7) thousandths (143 for 1g, 286 for 2g,
// 429 for 3g, 572 for 4g), one less when it takes compute slice 6 (a 1g
// at slice 6 is charged 142, a 3g at slice 4 428), and 1000 for 7g: never
// less than its seventh parts rounded down, never more than rounded up.
// See ShareAt.
type MIGProfile struct {
	// Name is NVIDIA's profile name, such as "1g.10gb".
	Name string
	// Slices is the number of consecutive memory slices it occupies.
	Slices int
	// Starts is the set of memory slices it may start at: bit i for
	// slice i, as the driver's placement table lists them.
	Starts uint8
	// Compute is the number of the GPU's seven compute slices it takes
	// (the "1" of "1g.10gb").
	Compute int
}

// MIGSlices is the number of memory slices of a MIG-capable GPU.
const MIGSlices = 8

// MIGCompute is the number of compute slices of a MIG-capable GPU.
const MIGCompute = 7

// ShareAt is what a slice of profile p starting at memory slice start is
// charged, in thousandths of its GPU: the charges of the compute slices
// it takes (see MIGProfile). For a start p may not take, it is the charge
// of the compute slices it would cover, clipped to the GPU.
func (p MIGProfile) ShareAt(start int) int {
	lo := min(max(start, 0), MIGCompute)
	hi := min(lo+p.Compute, MIGCompute)
	return computeCharge(hi) - computeCharge(lo)
}

// computeCharge is the charge of compute slices 0 to k-1 together: the
// whole GPU's thousandths spread over its seven compute slices, the
// rounding kept to the last one.
func computeCharge(k int) int { return (k*MilliGPU + MIGCompute - 1) / MIGCompute }

// migFull marks every memory slice of a GPU occupied.
const migFull uint8 = 1<<MIGSlices - 1

func startsAt(starts ...int) uint8 {
	var m uint8
	for _, s := range starts {
		m |= 1 << s
	}
	return m
}

// MIGProfiles returns the MIG geometry of a GPU model, or nil when the
// fleet knows none for it. The model is read from the flavor name: names
// starting with "H100" or "A100-80" get the 80 GB table (1g.10gb, 1g.20gb,
// 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb), other "A100" names the 40 GB one.
// Start positions follow NVIDIA's placement table for these GPUs: 1g
// profiles of one slice at 0-6, of two slices at 0, 2, 4, 6; 2g at 0, 2,
// 4; 3g at 0 and 4; 4g and 7g at 0. The caller owns the returned slice.
func MIGProfiles(flavor string) []MIGProfile {
	f := strings.ToUpper(flavor)
	var mem [6]string
	switch {
	case strings.HasPrefix(f, "H100"), strings.HasPrefix(f, "A100-80"), strings.HasPrefix(f, "A100_80"):
		mem = [6]string{"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}
	case strings.HasPrefix(f, "A100"):
		mem = [6]string{"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}
	default:
		return nil
	}
	return []MIGProfile{
		{Name: mem[0], Slices: 1, Starts: startsAt(0, 1, 2, 3, 4, 5, 6), Compute: 1},
		{Name: mem[1], Slices: 2, Starts: startsAt(0, 2, 4, 6), Compute: 1},
		{Name: mem[2], Slices: 2, Starts: startsAt(0, 2, 4), Compute: 2},
		{Name: mem[3], Slices: 4, Starts: startsAt(0, 4), Compute: 3},
		{Name: mem[4], Slices: 4, Starts: startsAt(0), Compute: 4},
		{Name: mem[5], Slices: 8, Starts: startsAt(0), Compute: 7},
	}
}

// migModel is one model's geometry, looked up once per fleet.
type migModel struct {
	flavor   string
	profiles []MIGProfile
}

// MIG reports whether node n's GPUs are MIG-partitioned.
func (f *Fleet) MIG(n NodeID) bool { return f.nmig[n] >= 0 }

// NodeMIGProfile returns the profile called name on node n's GPU model,
// and false when the node is not MIG-partitioned or its model lacks it.
func (f *Fleet) NodeMIGProfile(n NodeID, name string) (MIGProfile, bool) {
	m := f.nmig[n]
	if m < 0 {
		return MIGProfile{}, false
	}
	for _, p := range f.migModels[m].profiles {
		if p.Name == name {
			return p, true
		}
	}
	return MIGProfile{}, false
}

// MIGStart returns the first start position at which profile p fits on
// a GPU whose occupied memory slices are used (bit i for slice i), and
// false when none does.
func MIGStart(used uint8, p MIGProfile) (int, bool) {
	span := uint8(1<<p.Slices - 1)
	if p.Slices >= MIGSlices {
		span = migFull
	}
	for s := 0; s < MIGSlices; s++ {
		if p.Starts&(1<<s) != 0 && used&(span<<s) == 0 && s+p.Slices <= MIGSlices {
			return s, true
		}
	}
	return 0, false
}

// MIGFits counts how many more instances of profile p fit on a GPU whose
// occupied slices are used, placing each at its first free start.
func MIGFits(used uint8, p MIGProfile) int {
	n := 0
	for {
		s, ok := MIGStart(used, p)
		if !ok {
			return n
		}
		used |= migSpan(p, s)
		n++
	}
}

func migSpan(p MIGProfile, start int) uint8 {
	if p.Slices >= MIGSlices {
		return migFull
	}
	return uint8(1<<p.Slices-1) << start
}
