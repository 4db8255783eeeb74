package host

import (
	"context"
	"time"
)

// Every calls f at once and then every period until ctx ends, and
// returns ctx's error. A call that outlasts the period delays the next
// one (the ticker drops the ticks missed), so calls never overlap.
func Every(ctx context.Context, period time.Duration, f func()) error {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
