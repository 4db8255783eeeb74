package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/fleetsched/fleet/importer/kueue"
)

// LeaseName is the coordination.k8s.io Lease the replicas elect a leader
// on, in Config.Namespace.
const LeaseName = "fleet-scheduler"

// QuotaKey is the ConfigMap key holding the Kueue YAML.
const QuotaKey = "quota.yaml"

// LoadQuota reads the Kueue objects from the file or ConfigMap the
// configuration names.
func LoadQuota(ctx context.Context, client kubernetes.Interface, cfg *Config) (*kueue.Result, error) {
	var data []byte
	switch {
	case cfg.QuotaFile != "":
		b, err := os.ReadFile(cfg.QuotaFile)
		if err != nil {
			return nil, fmt.Errorf("kube: quota file: %w", err)
		}
		data = b
	default:
		ns, name, ok := strings.Cut(cfg.QuotaConfigMap, "/")
		if !ok {
			return nil, fmt.Errorf("%w: quotaConfigMap %q: write namespace/name", ErrConfig, cfg.QuotaConfigMap)
		}
		cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("kube: quota ConfigMap %s: %w", cfg.QuotaConfigMap, err)
		}
		v, ok := cm.Data[QuotaKey]
		if !ok {
			return nil, fmt.Errorf("kube: quota ConfigMap %s has no key %s", cfg.QuotaConfigMap, QuotaKey)
		}
		data = []byte(v)
	}
	return kueue.Parse(data, kueue.Options{})
}

// Run starts the informers, serves /metrics, /healthz and /readyz, and
// runs the scheduling loop while this replica holds the Lease. It returns
// when ctx ends or leadership is lost (the process should then exit and
// restart, as kube-scheduler does).
func Run(ctx context.Context, cfg Config, o Options, reg *prometheus.Registry) error {
	c, err := New(cfg, o)
	if err != nil {
		return err
	}
	srv := c.server(reg)
	if srv != nil {
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				c.log.Error("http", "err", err)
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	if err := c.StartInformers(ctx); err != nil {
		return err
	}
	return c.Elect(ctx)
}

// Elect runs the loop under leader election on the Lease: Lead while
// leading, return when leadership ends.
func (c *Controller) Elect(ctx context.Context) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: LeaseName, Namespace: c.cfg.Namespace},
		Client:     c.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: c.cfg.Identity},
	}
	var leadErr error
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: c.cfg.LeaseDuration.Duration,
		RenewDeadline: c.cfg.RenewDeadline.Duration,
		RetryPeriod:   c.cfg.RetryPeriod.Duration,
		Name:          c.cfg.SchedulerName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				c.log.Info("leading", "identity", c.cfg.Identity)
				if err := c.Lead(ctx); err != nil && !errors.Is(err, context.Canceled) {
					leadErr = err
				}
			},
			OnStoppedLeading: func() { c.log.Info("stopped leading", "identity", c.cfg.Identity) },
		},
	})
	if err != nil {
		return err
	}
	le.Run(ctx)
	if leadErr != nil {
		return leadErr
	}
	return ctx.Err()
}

// server serves /metrics, /healthz (the process runs) and /readyz (the
// caches synced; a standby replica is ready too). nil without Listen.
func (c *Controller) server(reg *prometheus.Registry) *http.Server {
	if c.cfg.Listen == "" {
		return nil
	}
	mux := http.NewServeMux()
	if reg != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !c.podInf.HasSynced() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		role := "standby"
		if c.Leading() {
			role = "leader"
		}
		_, _ = w.Write([]byte("ok " + role + "\n"))
	})
	return &http.Server{Addr: c.cfg.Listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}
