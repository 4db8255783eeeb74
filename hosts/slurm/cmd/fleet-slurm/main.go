// Command fleet-slurm schedules the jobs of a Slurm cluster's managed
// partitions with the fleet library. It runs beside slurmctld (any host
// with Slurm's client commands and a munge key): jobs of the managed
// partitions start held (job_submit.lua), and each cycle it places them
// with fleet, sets their ReqNodeList and releases them; victims are
// requeue-held (SIGTERM) or signalled; a waiting job's Comment says why.
//
//	fleet-slurm -config fleet-slurm.json -quota quota.yaml -listen :9400
//
// The configuration is hosts/slurm's Config as JSON; the quota is a Kueue
// file (ClusterQueue, Cohort, ResourceFlavor) or, ending in .json, a
// fleet quota.Spec.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/fleetsched/fleet/hosts/slurm"
	"github.com/fleetsched/fleet/importer/kueue"
	"github.com/fleetsched/fleet/quota"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fleet-slurm:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("fleet-slurm", flag.ContinueOnError)
	configFile := fs.String("config", "fleet-slurm.json", "the host's configuration (JSON)")
	quotaFile := fs.String("quota", "quota.yaml", "the quota: a Kueue YAML file, or a fleet quota spec (.json)")
	conf := fs.String("slurm-conf", os.Getenv("SLURM_CONF"), "slurm.conf of the cluster (default: Slurm's own)")
	topo := fs.String("topology", "", "topology.conf (default: beside slurm.conf)")
	state := fs.String("state", "", "the state file (overrides the configuration's stateFile)")
	period := fs.Duration("period", 0, "the longest time between two cycles (overrides the configuration's)")
	listen := fs.String("listen", "", "address of /metrics, /healthz and /readyz, as :9400 (overrides the configuration's)")
	once := fs.Bool("once", false, "run one cycle, print its decisions and exit")
	verbose := fs.Bool("v", false, "log every cycle")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := slurm.LoadConfig(*configFile)
	if err != nil {
		return err
	}
	if *state != "" {
		cfg.StateFile = *state
	}
	if *period > 0 {
		cfg.Period = slurm.Duration(*period)
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	q, err := loadQuota(*quotaFile)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cmds := &slurm.Commands{Runner: slurm.Exec{Conf: *conf}, TopologyFile: *topo}
	h, err := slurm.New(cfg, slurm.Options{Slurm: cmds, Quota: q, Logger: log})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *once {
		d, err := h.Cycle(ctx)
		if err != nil {
			return err
		}
		for _, a := range d.Admit {
			nodes := make([]string, len(a.Pods))
			for i, p := range a.Pods {
				nodes[i] = p.Node
			}
			fmt.Printf("admit %s queue %s on %s (%s)\n", a.ID, a.Queue, strings.Join(nodes, ","), a.Span)
		}
		for _, dr := range d.Drain {
			fmt.Printf("drain %s (%s) for %s by %s\n", dr.ID, dr.Reason, strings.Join(dr.Beneficiaries, ","), dr.Deadline.Format(time.RFC3339))
		}
		for _, k := range d.Kill {
			fmt.Printf("kill %s\n", k.ID)
		}
		return nil
	}
	log.Info("fleet-slurm running", "partitions", cfg.Partitions, "state", cfg.StateFile, "listen", cfg.Listen)
	if err := h.Run(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func loadQuota(path string) (quota.Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return quota.Spec{}, err
	}
	if strings.HasSuffix(path, ".json") {
		var q quota.Spec
		if err := json.Unmarshal(b, &q); err != nil {
			return q, fmt.Errorf("%s: %w", path, err)
		}
		return q, nil
	}
	res, err := kueue.Parse(b, kueue.Options{})
	if err != nil {
		return quota.Spec{}, fmt.Errorf("%s: %w", path, err)
	}
	return res.Spec, nil
}
