package fleet

import (
	"time"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// Snapshot is a view of the scheduler's state for metrics, dashboards and
// restarts. It is a deep copy: the host may keep and change it, and the
// scheduler never sees the change. Restore rebuilds a scheduler from one.
type Snapshot struct {
	// Time is the now of the latest call the scheduler saw.
	Time time.Time
	// Seq is the scheduler's submission counter: Restore continues it so
	// that queue order ties break the same way.
	Seq uint64
	// Undelivered holds the events recorded since the last cycle, which
	// the next Decisions will carry: Restore keeps them.
	Undelivered []Event
	Fleet       FleetView
	Queues      []QueueView
	Running     []RunningView
	Pending     []PendingView
	// Nominated counts GPUs held for beneficiaries of drains in progress
	// and for the new places of movers (DrainView.MoveTo).
	Nominated int
	// Calendar is the approved bookings, pending proposals and the
	// decision log.
	Calendar calendar.State
	// Quota is the quota configuration in force, live edits (SetQueue)
	// included: Restore applies it over the Config's.
	Quota quota.Spec
	// ConfigQuota is the quota of the Config the scheduler was built
	// with, before live edits. Restore refuses a Config whose quota
	// differs: the snapshot's Quota would silently override the change.
	ConfigQuota quota.Spec
	// QuotaSchedule is the schedule quotas follow (nil: none; it is
	// immutable, so it is shared, not copied), and NextQuotaChange its next
	// boundary. In JSON it is its base, location name and rules
	// (quota.Schedule.MarshalJSON).
	QuotaSchedule   *quota.Schedule
	NextQuotaChange time.Time
	// Warm is what SetWarm reported: models with weights per node.
	Warm []WarmNode
	// Overflowing names, in order, the queues the last cycle listed in
	// Decisions.Overflow: Restore keeps them, so the cycle after a
	// restart still records when each stops overflowing.
	Overflowing []string
	// DefragSpent is the work automatic defragmentation moves cost within
	// the hour before Time, oldest first: Restore keeps it, so a restart
	// does not give Policy.DefragBudget a fresh hour.
	DefragSpent []DefragSpend `json:",omitempty"`
}

// DefragSpend is what one automatic defragmentation plan cost, counted
// against Policy.DefragBudget for an hour after it.
type DefragSpend struct {
	// At is when the plan was carried out.
	At time.Time
	// LostGPUSeconds is the work its moves lose (DefragPlan.LostGPUSeconds).
	LostGPUSeconds float64
}

// FleetView sums up the physical fleet.
type FleetView struct {
	// GPU counts: declared, on healthy nodes, free on healthy nodes, held
	// by workloads.
	GPUs, HealthyGPUs, FreeGPUs, AllocatedGPUs int
	// Node counts: declared, healthy, healthy with every GPU free.
	Nodes, HealthyNodes, FreeNodes int
	// StrandedGPUs are free GPUs on partly used healthy nodes.
	StrandedGPUs int
	// LargestFreeBlock is, per level (top first, nodes excluded), the most
	// fully free nodes inside one domain of that level.
	LargestFreeBlock []LevelBlock
	// Occupancy is the rendered occupancy map.
	Occupancy string
	// Unhealthy lists the nodes that are cordoned or down, by name.
	Unhealthy []NodeHealth
	// Crossings lists, for every leaf (the level just above the nodes)
	// that running gangs spanning several leaves use, how many of them
	// cross it: how many share its uplinks. In leaf order.
	Crossings []LeafCrossings
}

// LeafCrossings is the number of running gangs spanning several leaves
// with pods under one leaf.
type LeafCrossings struct {
	Leaf  string // the leaf's name
	Gangs int    // running multi-leaf gangs with pods under it
}

// NodeHealth is the health of one named node.
type NodeHealth struct {
	Node   string          // the node's name
	Health topology.Health // cordoned or down
}

// LevelBlock is the largest free block at one level.
type LevelBlock struct {
	Level  string // the level's name, e.g. "spine"
	Domain string // the domain of that level with the most free nodes
	Nodes  int    // its fully free nodes
}

// QueueView is one node of the quota tree, cohort or queue.
type QueueView struct {
	Name    string       // the cohort's or queue's name
	Parent  string       // its cohort ("" at the root)
	IsQueue bool         // true for a queue, false for a cohort
	Weight  float64      // its fair-sharing weight (quota.NodeSpec.Weight)
	Flavors []FlavorView // its quota and usage per flavor
	// DominantShare is Kueue's fair-sharing share (0 when not borrowing).
	DominantShare float64
	Pending       int
	Running       int
}

// FlavorView is one flavor's quota and usage on a quota node.
type FlavorView struct {
	Flavor   string // the GPU model, or a flavor of a group without GPUs
	Nominal  int64  // the node's nominal quota of it, in GPUs
	InUse    int64  // GPUs held by workloads below the node
	Borrowed int64  // usage above the node's own quota
	Lendable int64  // nominal not in use (what the node lends while idle)
	// Resources is the node's quota and usage of the named resources
	// (cpu, memory) of this flavor it has quota of or uses.
	Resources []ResourceView `json:",omitempty"`
}

// ResourceView is a quota node's quota and usage of one named resource
// of one flavor, in the resource's unit.
type ResourceView struct {
	Resource string // its name
	Nominal  int64  // the node's nominal quota of it
	InUse    int64  // held by workloads below the node
}

// RunningView is one admitted workload.
type RunningView struct {
	ID       string     // the workload
	Queue    string     // its queue
	Shape    gang.Shape // inference, training or batch
	Class    string     // its priority class's name
	Priority int32      // its priority
	Flavor   string     // the GPU model it runs on
	GPUs     int        // the whole GPUs it holds
	// MilliGPUs is what its quota is charged of GPUs, in thousandths:
	// whole GPUs, shares, and MIG slices by the compute slices they take
	// on the model it runs on (topology.MIGProfile.ShareAt).
	MilliGPUs int64
	// Flavors is set for work asking named resources of a queue whose
	// resource groups split them: per pod set, in spec order, the flavor
	// each named resource is charged in (resource name to flavor name,
	// Kueue's podSetAssignments[].flavors); its GPUs are charged in
	// Flavor. nil: every resource is charged in Flavor.
	Flavors   []map[string]string `json:",omitempty"`
	Started   time.Time
	Draining  bool
	Deadline  time.Time // when draining
	Nodes     []NodeGPUs
	Span      string
	Borrowing bool
	// LastCheckpoint is when it last saved its state (zero: never).
	LastCheckpoint time.Time
	// Submitted and Seq are its place in queue order.
	Submitted time.Time
	Seq       uint64
	// Spec is the workload as the scheduler resolved it (its flavor and
	// class priority filled in); Pods says where every pod runs.
	Spec gang.Workload
	Pods []PodAssignment
	// Drain is set while it drains.
	Drain *DrainView
	// Lost lists pods whose node went down, waiting for a replacement
	// (hot-swap); they are not in Pods or Nodes.
	Lost []LostPodView
	// IdleSince is since when the host has reported it idle (zero: busy
	// or never reported); see Scheduler.ReportUsage.
	IdleSince time.Time
	// SplitOf is set on a pod a shrink split off an elastic workload: the
	// workload, and SplitPod the pod as that workload numbers it.
	SplitOf  string
	SplitPod PodAssignment
}

// LostPodView is a pod waiting for a replacement node.
type LostPodView struct {
	Pod   PodAssignment // on the lost node
	Since time.Time     // when its node went down
}

// DrainView is a victim's drain.
type DrainView struct {
	Since    time.Time        // when the drain began
	Deadline time.Time        // when the host is asked to kill it
	Reason   gang.DrainReason // why it drains
	// Beneficiaries is every workload it was drained for; Live the ones
	// still counting on its GPUs or quota.
	Beneficiaries []string
	Live          []string
	// KillAsked is when the host was first asked to kill it.
	KillAsked time.Time
	// Claims are its GPUs promised to nominations.
	Claims []ClaimView
	// MoveTo, for a defragmentation move, is the place reserved for its
	// restart.
	MoveTo []PodAssignment
}

// ClaimView is a victim's GPUs on one node promised to a beneficiary.
type ClaimView struct {
	Beneficiary string // the workload promised the GPUs
	Node        string // the node they are on
	GPUs        int    // how many
}

// NominationView is the GPUs held for a pending beneficiary while its
// victims drain.
type NominationView struct {
	Pods     []PodAssignment // its target
	WaitOn   []string        // victims still holding part of it
	ReadyBy  time.Time       // when the last of its victims' deadlines is past
	Seq      uint64          // acceptance order
	Reserved []NodeGPUs      // GPUs already allocated for it
}

// NodeGPUs is a number of GPUs on a named node.
type NodeGPUs struct {
	Node string // the node's name
	GPUs int    // the GPUs on it
}

// PendingView is one workload waiting for admission.
type PendingView struct {
	ID        string     // the workload
	Queue     string     // its queue
	Shape     gang.Shape // inference, training or batch
	Priority  int32      // its priority
	GPUs      int        // the GPUs it asks for
	Submitted time.Time  // when Submit accepted it
	// Nominated is true when victims are draining for it; Nomination
	// says what is held for it.
	Nominated  bool
	Nomination *NominationView
	// Reclaiming lists, in ID order, the victims draining for it without
	// a nomination (work with GPU shares, MIG slices or named resources is
	// reclaimed so): it is admitted once they have exited, if the room
	// they free is still there.
	Reclaiming []string
	// Reserved names the domain of its required level the last cycle
	// held for it (the reservation of Schedule's step 5: lower-priority
	// work it cannot evict stays out, higher-priority work goes around it
	// when it fits elsewhere). Restore carries it into the next cycle;
	// a host that restarts by Adopt passes it in Adoption.Reserved.
	Reserved string `json:",omitempty"`
	Seq      uint64
	Spec     gang.Workload
}
