package fleet

import (
	"time"

	"github.com/fleetsched/fleet/gang"
)

// Snapshot is a read-only view of the scheduler's state for metrics and
// dashboards. It is a deep copy: the host may keep and modify it.
type Snapshot struct {
	// Time is the now of the latest call the scheduler saw.
	Time    time.Time
	Fleet   FleetView
	Queues  []QueueView
	Running []RunningView
	Pending []PendingView
	// Nominated counts GPUs held for beneficiaries of drains in progress.
	Nominated int
}

// FleetView sums up the physical fleet.
type FleetView struct {
	GPUs, HealthyGPUs, FreeGPUs, AllocatedGPUs int
	Nodes, HealthyNodes, FreeNodes             int
	// StrandedGPUs are free GPUs on partly used healthy nodes.
	StrandedGPUs int
	// LargestFreeBlock is, per level (top first, nodes excluded), the most
	// fully free nodes inside one domain of that level.
	LargestFreeBlock []LevelBlock
	// Occupancy is the rendered occupancy map.
	Occupancy string
}

// LevelBlock is the largest free block at one level.
type LevelBlock struct {
	Level  string
	Domain string
	Nodes  int
}

// QueueView is one node of the quota tree, cohort or queue.
type QueueView struct {
	Name    string
	Parent  string
	IsQueue bool
	Weight  float64
	Flavors []FlavorView
	// DominantShare is Kueue's fair-sharing share (0 when not borrowing).
	DominantShare float64
	Pending       int
	Running       int
}

// FlavorView is one flavor's quota and usage on a quota node.
type FlavorView struct {
	Flavor   string
	Nominal  int64
	InUse    int64 // GPUs held by workloads below the node
	Borrowed int64 // usage above the node's own quota
	Lendable int64 // nominal not in use (what the node lends while idle)
}

// RunningView is one admitted workload.
type RunningView struct {
	ID        string
	Queue     string
	Shape     gang.Shape
	Class     string
	Priority  int32
	Flavor    string
	GPUs      int
	Started   time.Time
	Draining  bool
	Deadline  time.Time // when draining
	Nodes     []NodeGPUs
	Span      string
	Borrowing bool
}

// NodeGPUs is a number of GPUs on a named node.
type NodeGPUs struct {
	Node string
	GPUs int
}

// PendingView is one workload waiting for admission.
type PendingView struct {
	ID        string
	Queue     string
	Shape     gang.Shape
	Priority  int32
	GPUs      int
	Submitted time.Time
	// Nominated is true when victims are draining for it.
	Nominated bool
}
