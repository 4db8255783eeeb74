// Package traces ships small, attributed extracts of public GPU-cluster
// traces that tests, benchmarks and the simulator draw realistic workloads
// from. Nothing here reads files at run time: the data is embedded.
package traces

import (
	_ "embed"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

//go:embed philly_sizes.csv
var phillySizes string

// SizeClass is one gang size of a trace: how many jobs asked for it and
// the GPU-hours they used.
type SizeClass struct {
	GPUs     int
	Jobs     int
	GPUHours float64
}

// PhillySizes returns the job-size mix of the Microsoft Philly trace
// (Jeon et al., USENIX ATC 2019; CC BY 4.0): 93% of jobs take 1 GPU, while
// multi-GPU gangs carry 82% of GPU-time.
func PhillySizes() []SizeClass {
	var out []SizeClass
	for _, line := range strings.Split(phillySizes, "\n") {
		if line == "" || line[0] == '#' || strings.HasPrefix(line, "num_gpus") {
			continue
		}
		f := strings.Split(line, ",")
		g, err1 := strconv.Atoi(f[0])
		j, err2 := strconv.Atoi(f[1])
		h, err3 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			panic(fmt.Sprintf("traces: bad embedded line %q", line))
		}
		out = append(out, SizeClass{GPUs: g, Jobs: j, GPUHours: h})
	}
	return out
}

// Sampler draws gang sizes with the trace's job frequencies.
type Sampler struct {
	sizes []int
	cum   []int
	total int
}

// NewSampler builds a sampler over classes, weighted by job count.
func NewSampler(classes []SizeClass) *Sampler {
	s := &Sampler{}
	for _, c := range classes {
		s.total += c.Jobs
		s.sizes = append(s.sizes, c.GPUs)
		s.cum = append(s.cum, s.total)
	}
	return s
}

// Draw returns one gang size.
func (s *Sampler) Draw(r *rand.Rand) int {
	x := r.IntN(s.total)
	i, _ := slices.BinarySearch(s.cum, x+1)
	return s.sizes[i]
}
