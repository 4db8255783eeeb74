package host

import (
	"strings"

	"github.com/fleetsched/fleet"
)

// Sentence is Explain's sentence without the time of the cycle, so that
// what a host writes on a waiting workload (a pod condition, a job's
// Comment) changes only when the reason does.
func Sentence(x fleet.Explanation) string {
	msg := x.Message
	if i := strings.LastIndex(msg, "; as of the cycle at "); i >= 0 {
		msg = msg[:i]
	} else if i := strings.LastIndex(msg, "as of the cycle at "); i >= 0 {
		msg = strings.TrimRight(msg[:i], "; :")
	}
	return msg
}

// Waiting is the Sentence of a pending workload that a cycle has
// considered. ok is false for an unknown ID and for a workload no cycle
// has looked at yet (fleet.WaitUnscheduled): a host then writes nothing.
func Waiting(s *fleet.Scheduler, id string) (msg string, ok bool) {
	x, err := s.Explain(id)
	if err != nil || x.Waiting == fleet.WaitUnscheduled {
		return "", false
	}
	return Sentence(x), true
}
