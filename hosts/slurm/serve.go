package slurm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Handler serves /metrics (the host's Metrics in Prometheus's text
// format; 404 without Metrics), /healthz (the process runs) and /readyz
// (a cycle has read the cluster and built the scheduler).
func (h *Host) Handler() http.Handler {
	mux := http.NewServeMux()
	if h.metrics != nil {
		mux.Handle("/metrics", h.metrics)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !h.ready.Load() {
			http.Error(w, "no cycle has read the cluster yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// serve serves Handler on addr until stop is called.
func (h *Host) serve(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("slurm: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Error("http", "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
