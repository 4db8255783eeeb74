package calendar

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBookingString(t *testing.T) {
	start := time.Date(2025, 2, 15, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		b    Booking
		want string
	}{
		{"two spines", Booking{ID: "pretrain", Queue: "research", Flavor: "H100", GPUs: 1024, Level: "spine",
			Domains: []string{"spine-0", "spine-1"}, Held: 1024, Start: start, End: start.Add(21 * 24 * time.Hour), ApprovedBy: "gpu-council"},
			`booking "pretrain": research, 1024 H100 GPUs on spine-0, spine-1 (1024 held), 2025-02-15 00:00 to 2025-03-08 00:00 UTC, approved by gpu-council`},
		{"a pool", Booking{ID: "eval", Queue: "research", Flavor: "H100", Pool: "eval", GPUs: 60, Level: "leaf",
			Domains: []string{"leaf-0-1"}, Held: 64, Start: start, End: start.Add(6 * time.Hour), ApprovedBy: "alice"},
			`booking "eval": research, 60 H100 GPUs of pool eval on leaf-0-1 (64 held), 2025-02-15 00:00 to 2025-02-15 06:00 UTC, approved by alice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.b.String())
			assert.Equal(t, tc.want, (&tc.b).String())
		})
	}
}
