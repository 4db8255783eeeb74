package fleet

import (
	"fmt"
	"time"

	"github.com/fleetsched/fleet/quota"
)

// SetQueue records and forwards Scheduler.SetQueue.
func (j *Journal) SetQueue(now time.Time, spec quota.NodeSpec) error {
	return j.call(Call{Op: "set-queue", Time: now, QuotaNode: &spec})
}

// RemoveNode records and forwards Scheduler.RemoveNode.
func (j *Journal) RemoveNode(now time.Time, node string) error {
	return j.call(Call{Op: "remove-node", Time: now, Node: node})
}

// AddNode records and forwards Scheduler.AddNode.
func (j *Journal) AddNode(now time.Time, node string) error {
	return j.call(Call{Op: "add-node", Time: now, Node: node})
}

// ReportUsage records and forwards Scheduler.ReportUsage.
func (j *Journal) ReportUsage(now time.Time, id string, busy bool) error {
	return j.call(Call{Op: "usage", Time: now, ID: id, Busy: busy})
}

// applyLive makes one recorded live operation or usage report.
func applyLive(s *Scheduler, c Call) error {
	switch c.Op {
	case "set-queue":
		if c.QuotaNode == nil {
			return fmt.Errorf("%w: set-queue without quotaNode", ErrInvalidQuota)
		}
		return s.SetQueue(c.Time, *c.QuotaNode)
	case "remove-node":
		return s.RemoveNode(c.Time, c.Node)
	case "add-node":
		return s.AddNode(c.Time, c.Node)
	case "usage":
		return s.ReportUsage(c.Time, c.ID, c.Busy)
	}
	return fmt.Errorf("%w: unknown journal op %q", ErrInvalid, c.Op)
}
