// Package kube runs the fleet scheduler on a Kubernetes cluster: it reads
// Nodes and the Pods whose spec.schedulerName is "fleet" (by default),
// turns them into fleet's topology and gang.Workloads, and carries the
// Scheduler's decisions out through the API server: one pods/binding per
// pod of an admitted gang, pod deletion with the drain's grace period,
// status.nominatedNodeName for beneficiaries, and a PodScheduled=False
// condition with Explain's sentence on every pod that waits.
//
// The command hosts/kube/cmd/fleet-scheduler wraps Run; manifests for a
// Deployment of two replicas, its ServiceAccount, RBAC and the Lease are
// in hosts/kube/deploy.
//
// # The controller
//
// The shape is kube-scheduler's and the sample-controller's: shared
// informers fill the pod and node listers; event handlers only enqueue a
// key (a workload's namespace/name, "nodes", or "cycle"); one worker takes
// a key, reads the listers, calls the Scheduler under a mutex, releases
// it, and only then writes the API (Config.Binders writes at a time). No
// decision is made in a handler and no API call is made while holding the
// Scheduler. The PodScheduled conditions and Events of pods that wait or
// are refused go to a lane of their own (8 writers, the latest message per
// pod), which writes only while no binding or deletion is in flight: a
// flood of bad pods delays its own answers, not the good pods' bindings
// (BenchmarkClusterBadPodFlood). Every Event (a drain's Preempted, a
// FailedBinding, QuotaApplied) is queued to one writer on the status
// client and never waited for: a drain's deletion does not queue behind
// the status budget. Past 4,096 queued Events new ones are dropped, as
// client-go's recorder drops them. A workload key is synced (submit,
// cancel, exit, checkpoint, refusal) and then asks for a cycle; the queue
// folds a burst of keys into few cycles. A cycle also runs every
// Config.Period. The clock is injectable (Options.Clock): the wall clock
// in production, the tests' virtual one in the cluster suite. What the
// controller shares with the Slurm host (the clock, a drain's record
// handed back to Adopt and the nomination dropped when the fleet cannot
// hold it, node health changes, the periodic cycle, the pending sentence,
// the writes in parallel) is written once in hosts/host.
//
// # Pods and nodes: the one seam
//
// translate.go maps the cluster's objects to fleet's values and back. Its
// keys:
//
//	key                                        on     read as
//	kueue.x-k8s.io/queue-name                  label  LocalQueue, mapped to its ClusterQueue by the quota file
//	kueue.x-k8s.io/pod-group-name              label  the gang: every pod with the same value is one workload
//	kueue.x-k8s.io/pod-group-total-count       annot  the gang's pod count; it waits until all exist
//	kueue.x-k8s.io/podset-required-topology    annot  a node label of the preset's levels: the required level
//	kueue.x-k8s.io/podset-preferred-topology   annot  the same, preferred
//	spec.priorityClassName                     field  fleet's priority class (Config.PriorityClasses maps names)
//	spec.schedulerName                         field  only pods naming Config.SchedulerName are scheduled
//	limits nvidia.com/gpu                      field  the pod's whole GPUs (every pod of a group alike)
//	fleetsched.io/shape                        annot  inference, training or batch (default: Config.Shapes by class)
//	fleetsched.io/preemptible                  annot  "true": the drain contract allows eviction
//	fleetsched.io/checkpoint-interval          annot  a Go duration ("10m"): how often it checkpoints
//	fleetsched.io/last-checkpoint              annot  RFC 3339: the workload writes its last checkpoint's time
//	fleetsched.io/survives-node-loss           annot  "true": a lost rank is hot-swapped, not the gang requeued
//	fleetsched.io/gpu-share                    annot  thousandths of one GPU (time-slicing), instead of whole GPUs
//	fleetsched.io/mig-profile                  annot  the MIG profile of each pod's slice ("1g.10gb")
//	fleetsched.io/min-count                    annot  refused below the group's count: elastic groups (start smaller,
//	                                                  grow, give up one pod) are not carried out by this host
//	fleetsched.io/admitted                     annot  written: the admission time, carried by the binding
//	fleetsched.io/drain                        annot  written: a victim's drain (JSON: reason, since, deadline,
//	                                                  beneficiaries) before its pods are deleted
//
// The workload's ID is namespace/group (or namespace/pod for a pod alone);
// its pods are indexed in name order. Nodes become the fleet through
// importer/k8s with Config.Preset (gke, aws, topograph): the topology
// levels and NVLink cliques from node labels, GPUs from allocatable
// nvidia.com/gpu, the GPU model from a Kueue ResourceFlavor whose
// nodeLabels the node matches (else the preset's label). GPUs held by pods
// fleet does not schedule (DaemonSets, other schedulers' pods) are taken
// off their node's GPUs: fleet never places work on them and never evicts
// those pods. A node with Ready False or Unknown is down; spec.unschedulable
// is cordoned. Quota is Kueue's ClusterQueue, Cohort, ResourceFlavor and
// LocalQueue YAML through importer/kueue, from Config.QuotaFile or the key
// quota.yaml of Config.QuotaConfigMap.
//
// A pod that Kueue's plain-pod integration accepts runs under fleet by
// changing its schedulerName alone. Not supported of those conventions:
// pod groups whose pods differ in shape (Kueue's several pod sets per
// group, by role hash: here every pod of a group must ask the same GPUs;
// the others are refused with a condition), kueue.x-k8s.io/priority-class
// labels (WorkloadPriorityClass; spec.priorityClassName is read),
// podset-slice-* and podset-group-name annotations, the retriable-in-group
// annotation, and admission checks. Nodes joining or leaving, or
// relabelled, rebuild the scheduler from the cluster (as a failover does).
//
// # Decisions on the cluster
//
//   - Admit: every pod of the gang gets its pods/binding in the same pass,
//     only once the whole gang was admitted. Kubernetes binds one pod at a
//     time, so a watcher can see a gang part bound only during that pass
//     (TestClusterAllOrNothing measures it).
//   - A binding that fails half way: a bound pod cannot be unbound, so
//     the gang cannot go back to the queue whole. When a pod was deleted
//     between the admission and its binding (or its binding failed
//     otherwise), the pods already bound stay bound and the gang keeps
//     its GPUs, the missing pod's node included: a pod its owner creates
//     again for the group is bound to that node, a pod still there but
//     unbound is bound again, and the gang ends when its other pods exit
//     or are deleted. When the node went away, the API server binds to
//     it all the same (it does not check the binding's node); the node's
//     deletion rebuilds the fleet without it, and a workload with a pod
//     bound to a node the cluster no longer has ends, all or nothing: its
//     pods on the nodes still there are deleted too, as for a gang whose
//     node goes down, and the pods its owner creates again are a new
//     submission (TestClusterGangBindingFailsHalfWay shows both).
//   - Drain: the victim's pods are annotated with fleetsched.io/drain and
//     deleted with gracePeriodSeconds = the whole seconds left to the
//     drain's deadline (at least 1): the kubelet sends SIGTERM and kills at
//     the end of the grace period, which is the drain contract.
//   - Kill: deletion with grace 0, once per victim.
//   - Nominations: status.nominatedNodeName on each beneficiary pod, cleared
//     when the nomination ends.
//   - Exits: a running workload ends when none of its pods is left or
//     running: drained or killed when it was a victim, failed when a pod
//     failed (the rest of the group is then deleted, as Kueue does for a
//     pod group), finished when they succeeded, cancelled when deleted.
//   - Checkpoints: the latest fleetsched.io/last-checkpoint over the pods,
//     reported with Checkpointed when it moves forward.
//   - Node loss: a gang that survives node loss keeps running; when the
//     scheduler names a replacement node, the pod on the lost node is
//     deleted at once and the pod its owner recreates is bound there. Other
//     gangs on the node end and their pods are deleted.
//   - Waiting: a PodScheduled=False condition, reason Unschedulable, with
//     Explain's sentence (without the cycle's time, which the condition's
//     lastTransitionTime carries), and a FailedScheduling Event, written
//     only on pods whose condition says something else: not every cycle,
//     and not again by a new leader.
//   - Bad input (unknown LocalQueue, a malformed annotation, a group that
//     never completes, a pod larger than any node, a topology label the
//     preset does not know): the same condition and Event, saying what is
//     wrong and what to change; the workload is not submitted, and nothing
//     else changes.
//
// # Restart and failover
//
// Replicas elect a leader on the coordination.k8s.io Lease
// "fleet-scheduler" in Config.Namespace (client-go's leaderelection); the
// standby keeps its informers warm. A new leader rebuilds its Scheduler
// with fleet.Scheduler.Adopt from the cluster and from the state the
// leaders keep in the API server:
//
//	fact                                  kept in
//	running work, its nodes, its start    pods: spec.nodeName, fleetsched.io/admitted
//	a drain's reason, start, deadline,    pods: fleetsched.io/drain, deletionTimestamp;
//	  beneficiaries, kill asked             and the state (before the pods are patched)
//	a drain's claims, a move's new place  the state
//	a nomination's nodes                  the state; pods: status.nominatedNodeName
//	a nomination's ready time             the state
//	where every pod of a running gang     the state
//	  belongs (a pod gone keeps its place)
//	submission order (Adoption.Seq)       the state
//	an admission's Borrowing              the state
//	last checkpoint                       pods: fleetsched.io/last-checkpoint (the workload writes it)
//	lost pods of a gang that survives     pods on a node whose Ready is False or Unknown
//	  node loss
//	quota                                 its file or ConfigMap, read again when it changes
//
// The state is the ConfigMap "fleet-scheduler-state" in Config.Namespace:
// JSON, gzip-compressed, under binaryData "state.json.gz" (State,
// EncodeState). The leader writes it after a cycle, and after a rebuild,
// before it carries out their actions, and only when its content changed;
// a leader killed between the two leaves what it was about to do, and the
// next one does it (a drain the state records whose pods are not
// terminating is carried out by the rebuild). Its size at 2,048 GPUs and
// 10,000 pods, every workload a gang of two (TestStateSize): 286 KB with
// 1,024 gangs draining, their GPUs claimed by 1,024 nominated gangs and
// 2,952 more pending; 459 KB with 4,000 gangs sharing GPUs all draining
// for 1,000 pending ones; with every name at Kubernetes' 63-character
// limit, 466 KB and 775 KB. A ConfigMap holds 1 MiB (the state is capped
// at MaxStateBytes, 1,008 KiB); etcd's request limit is 1.5 MiB. A state
// that grows past the cap is replaced by an empty one, with an error
// logged, and a failover then rebuilds from the pods alone as below. A
// write that fails is logged and the actions go ahead; the next cycle
// writes again.
//
// From the pods alone (no state, or none for a workload): bound pods are
// running work; terminating pods with a fleetsched.io/drain note are
// drains in progress (the deadline is the deletionTimestamp when the note
// has none), and the beneficiaries still in the cluster count on them;
// pending pods with status.nominatedNodeName are nominations, whose
// claims and ready time are then derived (fleet.AdoptedDrain.Claims);
// pods bound on a down node of a gang that survives node loss are lost
// pods waiting for a replacement. So a leader killed mid-drain costs
// nothing: no victim is drained twice, no deadline moves, no extra victim
// is picked, and the claims and ready times are those the old leader had
// (TestClusterLeaderFailoverMidDrain).
//
// A gang found part bound (a pod deleted while no leader ran, or a
// binding pass cut short) is adopted whole when the state says where its
// pods belong: the missing pod's GPUs stay charged on its node, as under
// a leader that never stopped, and the pod its owner creates again is
// bound there. Without that record its GPUs cannot be charged whole, and
// a gang that does not run whole has failed: its other pods are deleted,
// as when a rank fails, and its owner's new pods queue it again
// (TestClusterFailoverGangMissingPod).
//
// The state also keeps what automatic defragmentation spent within the
// last hour (State.DefragSpent, from each cycle's defrag drains), and the
// new leader adopts it (fleet.Scheduler.AdoptDefragSpent): a program
// passing Options.Policy.DefragBudget does not get a fresh hour's budget
// from a failover (fleet-scheduler runs with it off). Not rebuilt:
// bookings (this host offers no booking API), quota schedules (none is
// set) and idle reports (ReportUsage is not called).
//
// # Quota edits
//
// The quota is read again when it changes: Config.QuotaConfigMap through
// an informer on that one ConfigMap, Config.QuotaFile every period. A
// change is applied live, on the leader, as fleet.Scheduler.SetQueue for
// every cohort and ClusterQueue that differs, all or none (in passes, so
// that lowering one guarantee may make room for raising another); a
// LocalQueue or ResourceFlavor change takes effect for the pods from then
// on, and pods refused at submission are judged again. Nothing is evicted
// by an edit itself: a queue left above its new quota borrows, and reclaim
// may take it back. A YAML that does not parse, an edit the scheduler
// refuses (over the fleet's capacity, breaking the tree's rules), or one
// that adds, removes or moves a cohort or ClusterQueue or changes the
// flavors is refused whole: the quota in force stays, the error is
// logged, and a Warning Event with reason QuotaRefused is recorded on the
// ConfigMap (on the Lease for a file); an applied edit gets a Normal
// QuotaApplied Event. A change of the tree's shape is taken by the next
// leader's rebuild (restart the scheduler). TestClusterQuotaEdit edits a
// ConfigMap under a running scheduler.
//
// # Flags and configuration file
//
//	-config FILE            YAML with the fields of Config (json names)
//	-kubeconfig FILE        default: in-cluster, then $KUBECONFIG
//	-scheduler-name fleet   spec.schedulerName of the pods it schedules
//	-namespace fleet-system the Lease's and the state ConfigMap's namespace
//	-identity NAME          this replica in the Lease (default: host name)
//	-preset gke             node labels: gke, aws, topograph
//	-quota-file FILE        Kueue YAML of the queues
//	-quota-configmap NS/NAME  a ConfigMap holding quota.yaml
//	-listen :8080           /metrics (metrics/prom), /healthz, /readyz
//	-qps 200 -burst 400     client rate to the API server (bindings, deletions)
//	-status-qps 100 -status-burst 200  conditions and Events, a client of their own
//	-binders 16             API writes in flight
//	-period 5s              longest time between two cycles
//
// The file also sets the priority classes (classes: name, value, grace,
// minRuntime), the priorityClassName mapping (priorityClasses), the
// default shapes per class (shapes) and leader election's timings. Logs
// are JSON lines (log/slog). /readyz answers once the caches synced, on
// the leader and the standby alike ("ok leader", "ok standby").
//
// # Tests
//
// The cluster suite (TestCluster*) runs a real kube-apiserver and etcd on
// loopback, started by the tests with a token file, a self-signed serving
// certificate and a service-account key. hack/apiserver-binaries builds
// them from the Go module proxy into a cache directory keyed by version
// (FLEET_KUBE_BINARIES may point at ready ones); the tests fail, never
// skip, when they cannot be had. The kubelet's side of pods (bound ->
// Running; deleted -> gone once its grace has passed on the test's clock,
// or at once when the test says the workload exited) is a small stand-in
// inside the tests rather than KWOK: the suite needs the grace period to
// pass on the test's virtual clock, which KWOK's stages read from the wall
// clock, and the stand-in is some eighty lines with no extra process.
//
// # Beside kube-scheduler
//
// BenchmarkClusterBind runs fleet-scheduler and kube-scheduler v1.37.2
// (built by hack/apiserver-binaries --scheduler from the same release)
// one after the other through the same kube-apiserver flags, on the same
// 256 Node objects of 8 GPUs, with the same pods and the same client QPS
// and burst (200, 400). kube-scheduler reads a gang from a PodGroup (gang
// policy, minCount 8, created before the timer) that each pod names in
// spec.schedulingGroup: its GangScheduling plugin, which v1.37 enables
// with the GenericWorkload feature gate (beta, off by default) on
// kube-apiserver and kube-scheduler, and scheduling.k8s.io/v1beta1 on.
// The nodes are Ready, allocate pods and GPUs, and lose the not-ready
// taint the API server puts on a new node (the suite has no node
// lifecycle controller); without that, kube-scheduler binds nothing. One
// run (go test -bench BenchmarkClusterBind -benchtime 1x) on a shared
// 2-core machine whose load average stood at 21 to 23 throughout:
//
//	scenario                       scheduler       pods/s  p50 ms  p99 ms  bound  part-bound gangs
//	2,000 pods of 1 GPU            fleet            116.4    1289    2471   2000  -
//	                               kube-scheduler    53.6    2342    5748   2000  -
//	64 gangs of 8 pods of 8 GPUs   fleet             55.8     942    1932    256  0
//	(32 fit)                       kube-scheduler    32.1    3588    4608    256  0
//
// Pods per second run from the first pod's creation to the last binding,
// the creation of the pods included; p50 and p99 are creation to binding
// as a watcher sees it; part-bound gangs are those the watcher sees part
// bound once the bindings stop. The figures move with the machine's load
// (fleet alone bound 247 and 165 pods per second on a quieter run);
// compare the rows of one run.
//
// BenchmarkClusterBadPodFlood creates bad pods at a steady rate (unknown
// LocalQueue, malformed annotation, 16 GPUs) while 1,000 good pods are
// created and bound, beside a flood of pods of another schedulerName at
// the same rate, the API server's load alone. The refusals go through the
// status client (Config.StatusQPS 100, StatusBurst 200): a condition and
// an Event per bad pod, under a budget of their own, written between the
// passes of decisions. One run on a shared 2-core machine (load average 5
// to 6):
//
//	flood                        good pods/s  good p99 ms  bad answered/s (whole flood)
//	none                               320.3         1307  -
//	100/s of another scheduler         322.1          991  -
//	100/s of fleet's                   322.0          720  64.4
//	300/s of another scheduler         266.5         1005  -
//	300/s of fleet's                   282.8          803  63.5
//
// Bad pods are answered at some 64 per second, the status budget's two
// writes each; a flood faster than that leaves a backlog (one entry per
// pod, its latest message) that drains after it. When the refusals
// shared the bindings' client, at 100 bad pods per second the good pods
// bound at 232 per second against 322 beside the other scheduler's
// flood, in a run at load 9; with no condition written at all, at 320.
package kube
