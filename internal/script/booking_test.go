package script

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBookingCommands(t *testing.T) {
	r, err := NewRunner()
	require.NoError(t, err)
	for _, cmd := range []string{"propose", "propose x start=soon duration=1h", "propose x start=1h duration=long",
		"propose x gpus=many start=1h duration=1h", "approve", "approve x option=first who=a", "shorten-booking x end=later who=a",
		"relocate-booking", "cancel-booking", "reject"} {
		_, err := r.Exec(cmd)
		assert.Error(t, err, cmd)
	}
	tests := []struct{ cmd, want string }{
		{"bookings", "(none)\n"},
		{"propose big queue=research gpus=4096 level=spine start=1h duration=1h", "error: calendar: request too large"},
		{"propose x queue=research gpus=64 level=leaf start=1h duration=2h", "option 0: leaf-0-0 gpus=64 stranded=0"},
		{"approve x who=", "error: calendar: decision names nobody"},
		{"approve x option=0 who=alice", "approved x: leaf leaf-0-0 for research from Nov 1 01:00:00 to Nov 1 03:00:00"},
		{"bookings", "booked x: leaf leaf-0-0"},
		{"shorten-booking x end=2h who=alice", "ok\n"},
		{"relocate-booking x who=alice", "error: calendar: no replacement offered"},
		{"cancel-booking x who=alice", "ok\n"},
		{"propose y queue=research gpus=64 level=leaf start=1h duration=2h", "option 0"},
		{"reject y who=alice why=later", "ok\n"},
		{"bookings", "(none)\n"},
	}
	for _, tt := range tests {
		got, err := r.Exec(tt.cmd)
		require.NoError(t, err, tt.cmd)
		assert.Contains(t, got, tt.want, tt.cmd)
	}
}
