// Command fleet-scheduler schedules the pods whose spec.schedulerName is
// "fleet" (by default) on a Kubernetes cluster with the fleet library:
// whole gangs bound at once, drains by grace period, Explain's sentence on
// every waiting pod. See the package doc of hosts/kube for its flags,
// configuration file, labels and annotations.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fleetsched/fleet/hosts/kube"
	"github.com/fleetsched/fleet/metrics/prom"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fleet-scheduler:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("fleet-scheduler", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster, then $KUBECONFIG)")
	cfg, err := kube.ParseFlags(fs, os.Args[1:])
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	rc, err := restConfig(*kubeconfig)
	if err != nil {
		return err
	}
	rc.UserAgent = "fleet-scheduler"
	client, status, err := kube.NewClients(rc, cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	q, err := kube.LoadQuota(ctx, client, &cfg)
	if err != nil {
		return err
	}
	for _, n := range q.Notes {
		log.Info("quota note", "note", n.String())
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := prom.New(reg)
	if err != nil {
		return err
	}
	err = kube.Run(ctx, cfg, kube.Options{Client: client, StatusClient: status, Quota: q, Logger: log, Metrics: exp}, reg)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		if rc, err := rest.InClusterConfig(); err == nil {
			return rc, nil
		}
		path = os.Getenv("KUBECONFIG")
	}
	return clientcmd.BuildConfigFromFlags("", path)
}
