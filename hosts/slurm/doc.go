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
//     requeue, scancel --signal=TERM; a kill is scancel --signal=KILL
//     for a requeueing job, scancel otherwise;
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
// Slurm's preemption must be off in the managed partitions
// (PreemptMode=OFF), and the drain deadline of a requeue-held job is
// bounded by slurm.conf's KillWait, after which Slurm sends SIGKILL.
// See docs/slurm.md for the setup and the test cluster (hack/cluster).
package slurm
