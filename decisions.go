package fleet

import (
	"fmt"
	"time"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/gang"
)

// Decisions is what one Schedule cycle asks of the host. The host must act
// on every field, in this order: Kill, then Drain, then Failed and
// Replace, then Admit. Kills and drains free capacity the admissions may
// already count on being nominated for them; admissions and replacements
// never use GPUs that a victim still holds.
type Decisions struct {
	// Kill lists victims past their drain deadline. The host must
	// force-stop each one now and report it with Exited(now, id, ExitKilled).
	Kill []Kill
	// Drain lists newly chosen victims. The host must send each a
	// termination signal now (SIGTERM: checkpoint and exit) and report the
	// exit with Exited. If it has not exited by Deadline, a later cycle
	// lists it in Kill.
	Drain []Drain
	// Failed lists gangs that survive the loss of a node but found no
	// replacement within Policy.HotSwapWait: they hold nothing now; the
	// host must stop what is left of them, as for a node loss.
	Failed []string
	// Replace lists lost pods of running gangs (hot-swap) with their new
	// node: the host restarts each rank there from its last checkpoint.
	// Never a gang Failed lists in the same Decisions.
	Replace []Replacement
	// Grow lists more pods of running elastic workloads to start now, on
	// GPUs already accounted to them; never a workload Admit lists in the
	// same Decisions.
	Grow []Growth
	// Admit lists workloads to start now, with the node and GPUs of every
	// pod. The GPUs are already accounted to them.
	Admit []Admission
	// Nominate lists the workloads nominated in this cycle: victims drain
	// for them (Drain) and the GPUs of every pod are held for them until
	// a later cycle admits them there. Nothing is to start yet; the host
	// may show where each will run (Kubernetes: status.nominatedNodeName)
	// and keeps it to adopt the workload after a restart
	// (Adoption.Nominated).
	Nominate []Nomination
	// Overflow lists the guaranteed inference queues that cannot get
	// their capacity back within Policy.OverflowAfter, even by preemption
	// and the calendar: the host may send that much traffic to an external
	// provider until a later cycle stops listing the queue.
	Overflow []Overflow
	// Broken lists, every cycle until it is settled, the approved bookings
	// with a node down in their blocks and what the calendar offers for
	// each (keep the block, move to a replacement, or none). A Move offer
	// binds only when the host accepts it with RelocateBooking; until then
	// the booking holds its broken block.
	Broken []calendar.Offer
	// Events records what happened in this cycle and in the calls since the
	// previous cycle, in order: the feed for metrics and audit logs. At
	// most MaxEvents are kept between two cycles; EventsDropped counts the
	// ones beyond. None are kept after KeepEvents(false).
	Events        []Event
	EventsDropped int
}

// Admission starts one workload.
type Admission struct {
	ID    string // the workload to start
	Queue string // its queue
	// Pods lists, for every pod, its pod set, index, node name and GPUs.
	Pods []PodAssignment
	// Wait is the time from submission to this admission.
	Wait time.Duration
	// Span is the level name of the smallest domain holding every pod
	// ("node", "leaf", "spine" or "fleet").
	Span string
	// Borrowing is true when the admission uses quota lent by others, and
	// so may be reclaimed by preemption.
	Borrowing bool
	// Flavors is set for work asking named resources of a queue whose
	// resource groups split them: per pod set, the flavor each named
	// resource is charged in (as RunningView.Flavors); a host that adopts
	// the workload after a restart passes it back (Adoption.Flavors).
	Flavors []map[string]string `json:",omitempty"`
}

// PodAssignment places one pod.
type PodAssignment struct {
	PodSet string // the pod set's name
	Index  int    // the pod's index in its pod set, from 0
	Node   string // the node's name
	GPUs   int    // whole GPUs; the node's GPUs held whole are interchangeable
	// GPU is the index, on Node, of the GPU holding the pod's share of one
	// GPU (Share, in thousandths) or its MIG slice (profile MIG, starting
	// at memory slice Slice); all zero for pods of whole GPUs or none.
	GPU   int    `json:",omitempty"`
	Share int    `json:",omitempty"`
	MIG   string `json:",omitempty"`
	Slice int    `json:",omitempty"`
}

// Nomination is where a pending workload will run once its victims exit.
type Nomination struct {
	ID string // the pending workload
	// Pods lists the node and GPUs of every pod, as its Admission will.
	Pods []PodAssignment
	// ReadyBy is when the last of its victims' deadlines is past (the
	// nomination's time when it has none): the latest its capacity is
	// back. A host that keeps it hands it back in Adoption.NominatedReadyBy.
	ReadyBy time.Time
}

// Drain asks the host to stop a victim gracefully.
type Drain struct {
	ID       string           // the victim to SIGTERM (a pod of Of when Of is set)
	Deadline time.Time        // when the host is asked to kill it if it has not exited
	Reason   gang.DrainReason // why it drains: preemption, reclaim, maintenance, idle, move...
	// Beneficiaries are the workloads it makes room for, in the order
	// their plan listed them: those its GPUs are nominated for, or, for a
	// victim that frees quota only, every beneficiary of its plan.
	Beneficiaries []string
	// LostGPUSeconds estimates the work lost: since the last checkpoint,
	// plus the restart, as the cost model prices it.
	LostGPUSeconds float64
	// Of is set when the victim is one pod an elastic workload gives up
	// (a shrink): the host stops only Pod of workload Of, which runs on
	// with its other pods, and reports that pod's exit as ID's.
	Of  string
	Pod PodAssignment
	// MoveTo, for a defragmentation move, is where it restarts: these
	// GPUs are reserved for it now, and once it has exited (drained or
	// killed) the next cycle admits it there, to resume from its last
	// checkpoint; the host need not resubmit it. Should a node of that
	// place leave service first, the place is given back (an event
	// EventNominationDissolved says so) and the mover, once it has exited,
	// is pending again and placed wherever it fits.
	MoveTo []NodeGPUs
}

// Overflow is a guaranteed inference queue short of capacity.
type Overflow struct {
	Queue string // the guaranteed inference queue
	// GPUs is what its pending replicas within its guarantee need and
	// will not get within the target.
	GPUs int
	// Since is when the oldest of them passed the target.
	Since time.Time
}

// Replacement moves one pod of a running gang from a lost node to a new
// one, inside the domain its topology request names.
type Replacement struct {
	ID      string // the running gang
	PodSet  string // the lost pod's pod set
	Index   int    // and its index in it
	OldNode string // the node lost
	NewNode string // the node to start the pod on
	GPUs    int    // the GPUs the pod takes there
	// Wait is the time since the old node was lost.
	Wait time.Duration
}

// Kill asks the host to force-stop a victim whose deadline passed. A
// victim that has not exited is listed again every cycle, with how overdue
// it is, until the host reports its exit.
type Kill struct {
	ID       string           // the victim to force-stop
	Deadline time.Time        // the deadline it passed
	Overdue  time.Duration    // how far past its deadline it is now
	Reason   gang.DrainReason // why it was drained
	// Of and Pod name the one pod to kill when the victim is a pod an
	// elastic workload gives up (see Drain.Of).
	Of  string
	Pod PodAssignment
}

// EventKind names what an Event records.
type EventKind uint8

const (
	EventSubmitted           EventKind = iota + 1 // Submit accepted a workload
	EventAdmitted                                 // a cycle admitted a workload (GPUs, BorrowedGPUs, Wait)
	EventDrainStarted                             // a cycle drained a victim (Reason, Deadline, Beneficiaries)
	EventKilled                                   // the host was asked to kill a victim past its deadline
	EventExited                                   // the host reported an exit (any reason)
	EventCancelled                                // Cancel withdrew a workload
	EventNodeDown                                 // the host reported Node down or cordoned
	EventNodeUp                                   // the host reported Node healthy again
	EventNominationDissolved                      // a nomination was given up, its reserved GPUs freed (Reason says why)
	EventCheckpointed                             // the host reported a checkpoint
	EventPodsLost                                 // a node went down under a gang that survives it
	EventReplaced                                 // a lost pod got a replacement node
	EventQueueChanged                             // SetQueue edited the quota node named in Queue
	EventNodeRemoved                              // RemoveNode took Node out of service
	EventNodeAdded                                // AddNode brought Node into service
	EventOverflow                                 // a guaranteed inference queue is short (GPUs; 0 when it no longer is)
	EventBlockBroken                              // Node went down in Booking's blocks; Reason the remedy, NewNode the replacements offered
	EventBlockWhole                               // Node came back and Booking's blocks are whole again: the offer is withdrawn
	EventRelocated                                // the host moved Booking's broken blocks (Node) to the calendar's replacements (NewNode)
	EventGrown                                    // a running elastic workload started more pods: GPUs is its size now, BorrowedGPUs what of them borrows
)

// Valid reports whether k is one of the event kinds.
func (k EventKind) Valid() bool { return k >= EventSubmitted && k <= EventGrown }

// String is the kind's name in the event log, e.g. "drain-started".
func (k EventKind) String() string {
	switch k {
	case EventSubmitted:
		return "submitted"
	case EventAdmitted:
		return "admitted"
	case EventDrainStarted:
		return "drain-started"
	case EventKilled:
		return "killed"
	case EventExited:
		return "exited"
	case EventCancelled:
		return "cancelled"
	case EventNodeDown:
		return "node-down"
	case EventNodeUp:
		return "node-up"
	case EventNominationDissolved:
		return "nomination-dissolved"
	case EventCheckpointed:
		return "checkpointed"
	case EventPodsLost:
		return "pods-lost"
	case EventReplaced:
		return "replaced"
	case EventQueueChanged:
		return "queue-changed"
	case EventNodeRemoved:
		return "node-removed"
	case EventOverflow:
		return "overflow"
	case EventNodeAdded:
		return "node-added"
	case EventBlockBroken:
		return "block-broken"
	case EventBlockWhole:
		return "block-whole"
	case EventRelocated:
		return "relocated"
	case EventGrown:
		return "grown"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is one typed record of the scheduler's history. Fields that do not
// apply to a kind are zero.
type Event struct {
	Kind     EventKind  // what happened
	Time     time.Time  // when: the now of the call or cycle that recorded it
	Workload string     // the workload it concerns
	Queue    string     // that workload's queue
	Shape    gang.Shape // that workload's shape
	Class    string     // priority class
	Priority int32      // its priority
	Flavor   string     // the GPU model it runs on
	GPUs     int        // the GPUs it holds (for EventGrown its size now)

	// Admitted: queue wait, span level name, whether it borrows and how
	// many GPUs of it are above the queue's nominal quota.
	Wait          time.Duration
	Span          string
	Borrowing     bool
	BorrowedGPUs  int
	CrossesSpines bool

	// Drain started / killed: reason, beneficiaries, deadline, lost work.
	// Exited: the drain reason of a victim. Node events: the health.
	// Nomination dissolved: why.
	Reason         string
	Beneficiaries  []string
	Deadline       time.Time
	LostGPUSeconds float64

	// Checkpointed: when the checkpoint was taken (at most Time).
	Checkpoint time.Time

	// Exited: how it ended and how long it ran.
	Exit    gang.ExitReason
	Runtime time.Duration

	// Node events: the node and the workloads that lost it. Pods lost:
	// the node and the GPUs lost there. Replaced: the old node, the new
	// one, and Wait the time it took.
	Node     string
	Affected []string
	LostGPUs int
	NewNode  string

	// Booking events: the booking whose blocks a node failure broke,
	// was repaired in, or moved.
	Booking string

	// Of names the elastic workload a drained pod belongs to (a shrink):
	// set on the drain, kill and exit of a split pod.
	Of string
}
