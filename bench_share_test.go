package fleet_test

import (
	"testing"
	"time"

	"github.com/fleetsched/fleet/gang"
)

// BenchmarkScheduleShared is BenchmarkSchedule's one-replica cycle for
// replicas that share GPUs, on the 85%-allocated mixed fleet: one pod of
// half a GPU, and four pods of a quarter.
func BenchmarkScheduleShared(b *testing.B) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	s, _, _ := mixedScheduler(b, 2048, now)
	for _, tc := range []struct {
		name string
		ps   gang.PodSet
	}{
		{"replica=0.5gpu", gang.PodSet{Name: "server", Count: 1, GPUShare: 500}},
		{"replica=4x0.25gpu", gang.PodSet{Name: "server", Count: 4, GPUShare: 250}},
	} {
		b.Run("gpus=2048/"+tc.name, func(b *testing.B) {
			benchOneReplica(b, s, now, "share", func(int) gang.PodSet { return tc.ps })
		})
	}
}
