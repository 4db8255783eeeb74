// Package slurm is a fleet host for a Slurm cluster: fleet decides, Slurm
// runs. Jobs submitted to the partitions fleet manages start held
// (hack/job_submit.lua sets their priority to 0, or submit them with
// sbatch --hold), so Slurm's own scheduler never places them; each cycle
// the Host
//
//   - reads the nodes (sinfo: GPUs and GPU model from GRES, cpus, memory,
//     state) and topology.conf (through importer/slurm) as fleet's
//     topology and node health (DOWN, NOT_RESPONDING and powered down
//     are down; DRAIN, MAINT and REBOOT are cordoned);
//   - reads the jobs (squeue) and gives fleet every new pending one as a
//     gang.Workload: its nodes are the pods of one pod set with the
//     job's GPUs per node; partition, account and QOS map to a queue,
//     priority class and shape by Config.Rules; --switches=1 asks one
//     leaf switch; --requeue makes it preemptible;
//   - runs Schedule and carries the decisions out: an admission sets the
//     job's ReqNodeList to fleet's nodes (scontrol update) and releases
//     it; a drain is scontrol requeuehold (SIGTERM to the job's steps,
//     the job back to pending and held) or, for a job that does not
//     requeue, scancel --signal=TERM; a kill at the drain deadline is
//     scancel --signal=KILL for a requeueing job and, for one that does
//     not requeue, scancel --batch --signal=KILL: SIGKILL to its script
//     at once (a plain scancel, which Slurm carries out as SIGTERM and
//     SIGKILL only after KillWait, would give a victim that ignores
//     SIGTERM KillWait more on its nodes);
//   - writes why each job waits in its Comment (squeue -o %k), and why
//     a job was refused (no rule for its partition, more GPUs than a node
//     has);
//   - holds again what Slurm requeued on its own (a node lost) and gives
//     it back to fleet.
//
// The Slurm interface is the boundary to the cluster: Commands runs
// Slurm's command-line tools (22.05 and later) through a Runner; Record
// and Replay record a session of commands and answer from it, so the same
// Host runs in unit tests against sessions recorded from a real cluster.
//
// A restart rebuilds the scheduler with Adopt from what Slurm shows
// (running jobs; victims still ending as drains in progress; pending jobs
// in submission order) and from the state file the host writes before it
// acts on each cycle (drains' deadlines and beneficiaries, nominations,
// submission order): killed mid-drain and restarted, it drains nothing
// again.
//
// # Metrics
//
// With Config.Listen set (fleet-slurm -listen :9400), Run serves
// /metrics, /healthz and /readyz. /metrics is fleet's figures in
// Prometheus's text format, from every cycle's events and a snapshot
// after it, with metrics/prom's names (fleet_admissions_total,
// fleet_queue_wait_seconds, fleet_preemptions_total,
// fleet_drain_deadline_misses_total, fleet_gpus_free,
// fleet_gpus_allocated{queue,flavor}, ...), so one dashboard reads both
// hosts. It is written by hosts/host's Metrics, with the standard
// library: this module's requirements stay the core and the importers,
// where metrics/prom would add the Prometheus client and its
// dependencies (protobuf, client_model, common, procfs, x/sys) to the
// module graph of every program that embeds the host. A test of
// metrics/prom requires the two to write the same text. What the text
// format lacks beside the client is the process and Go runtime
// collectors; a program that wants them, or GPU usage gauges, feeds a
// metrics/prom Exporter from Options.Observe and Scheduler itself.
//
// # What it shares with the Kubernetes host
//
// The clock, restart by Adopt (DrainNote embeds host.DrainRecord, and
// host.Adopt drops a nomination the fleet cannot hold), the loop
// (host.Every), node health (host.SyncHealth), the nodes of admissions
// and nominations, the pending sentence and the parallel carry-out are
// hosts/host's, as hosts/kube's are. This package translates Slurm's
// nodes and jobs and speaks Slurm's commands.
//
// # Not carried out
//
// The host gives fleet every job as a fixed-size gang that does not
// survive the loss of a node, so three kinds of decision never name one
// of its jobs, and it has no code for them:
//
//   - hot-swap (Decisions.Replace, and Decisions.Failed for a gang whose
//     replacement did not come): a job that loses a node is requeued by
//     Slurm (or ends NODE_FAIL); the host holds it again and fleet
//     places it whole (TestSlurmNodeDown). Slurm cannot add a node to a
//     running allocation, so a replacement would need the job's steps to
//     be restarted by the job itself;
//   - elastic shrink (a Drain or Kill with Of set) and growth
//     (Decisions.Grow): a job runs on the nodes it was admitted with
//     until it ends, and its pod set is never elastic;
//   - GPU sharing and MIG slices: the unit is a job's GPUs per node.
//
// # Before it runs
//
// Slurm's preemption must be off in the managed partitions
// (PreemptMode=OFF), and the drain deadline of a requeue-held job is
// bounded by slurm.conf's KillWait, after which Slurm sends SIGKILL: set
// KillWait to the classes' drain deadline.
// See docs/slurm.md for the setup and the test cluster (hack/cluster).
package slurm
