package host

import (
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/topology"
)

// HealthChange is one node whose new health the scheduler took.
type HealthChange struct {
	// Node is the node, Health its health now.
	Node   string
	Health topology.Health
	// Ended lists the workloads the scheduler ended because they lost the
	// node (gangs that survive a node loss are not among them: they wait
	// for a replacement). The host stops what is left of them.
	Ended []string
}

// SyncHealth reports to s, in node-name order, every node of health
// whose health differs from what known says, and records in known each
// change s takes. A node known does not list is new to the host and left
// alone: the fleet's shape changed, and the host rebuilds. A change s
// refuses is logged and not recorded, so the next call tries it again.
func SyncHealth(s *fleet.Scheduler, now time.Time, known, health map[string]topology.Health,
	log *slog.Logger) []HealthChange {
	var out []HealthChange
	for _, node := range slices.Sorted(maps.Keys(health)) {
		h := health[node]
		if old, ok := known[node]; !ok || old == h {
			continue
		}
		ended, err := s.SetNodeHealth(now, node, h)
		if err != nil {
			log.Warn("node health", "node", node, "err", err)
			continue
		}
		known[node] = h
		log.Info("node health", "node", node, "health", h.String(), "ended", ended)
		out = append(out, HealthChange{Node: node, Health: h, Ended: ended})
	}
	return out
}
