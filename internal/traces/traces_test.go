package traces

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPhillySizes(t *testing.T) {
	cs := PhillySizes()
	require.Len(t, cs, 10)
	jobs, one := 0, 0
	var hours, multi float64
	for _, c := range cs {
		jobs += c.Jobs
		hours += c.GPUHours
		if c.GPUs == 1 {
			one = c.Jobs
		} else {
			multi += c.GPUHours
		}
	}
	assert.Equal(t, 82247, jobs)
	assert.InDelta(t, 0.93, float64(one)/float64(jobs), 0.005)
	assert.InDelta(t, 0.82, multi/hours, 0.005)
}

func TestSamplerFollowsFrequencies(t *testing.T) {
	s := NewSampler(PhillySizes())
	r := rand.New(rand.NewPCG(1, 2))
	count := map[int]int{}
	for range 100000 {
		count[s.Draw(r)]++
	}
	assert.InDelta(t, 0.9317, float64(count[1])/100000, 0.01)
	assert.InDelta(t, 0.02, float64(count[8])/100000, 0.005)
	for g := range count {
		assert.Contains(t, []int{1, 2, 4, 8, 12, 16, 24, 32, 64, 128}, g)
	}
}
