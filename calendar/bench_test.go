package calendar_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fleetsched/fleet/calendar"
	"github.com/fleetsched/fleet/internal/benchlat"
	"github.com/fleetsched/fleet/internal/shapes"
	"github.com/fleetsched/fleet/placement"
	"github.com/fleetsched/fleet/quota"
	"github.com/fleetsched/fleet/topology"
)

// benchCalendar is a calendar over the scaled reference fleet with n
// approved leaf bookings of research, staggered every 4 hours for a day
// each, and a running view with one 8-GPU workload per node: a seeded mix
// of open-ended inference, preemptible research and borrowed batch with
// expected ends up to two days ahead.
func benchCalendar(b *testing.B, gpus, n int) (*calendar.Calendar, []calendar.Running, time.Time) {
	f := shapes.NewFleet(gpus)
	g := int64(f.Stats(topology.Root, topology.AllGroups).GPUs)
	tree, err := quota.New(quota.Spec{Flavors: []string{"H100"}, Nodes: []quota.NodeSpec{
		{Name: "all", Kind: quota.Cohort},
		{Name: "prod-inference", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: g * 1200 / 2048}}},
		{Name: "research", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: g * 600 / 2048}}},
		{Name: "batch", Parent: "all", Kind: quota.Queue, Quotas: []quota.FlavorQuota{{Flavor: "H100", Nominal: 0}}},
	}})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	c, err := calendar.New(now, calendar.Config{Fleet: f, Quota: tree})
	if err != nil {
		b.Fatal(err)
	}
	lo, hi := f.DomainsAt(2)
	for i := range n {
		leaf := f.DomainName(lo + topology.DomainID(i)%(hi-lo))
		req := calendar.Request{ID: fmt.Sprintf("leaf-booking-%d", i), Queue: "research", Flavor: "H100", GPUs: 64,
			Level: "leaf", Blocks: 1, Start: now.Add(time.Duration(i) * 4 * time.Hour), Duration: 24 * time.Hour}
		opts, err := c.Propose(now, req, nil)
		if err != nil {
			b.Fatal(err)
		}
		// Take the option on the intended leaf when offered; any feasible one otherwise.
		pick := -1
		for _, o := range opts {
			if o.Feasible() && (pick < 0 || o.DomainNames[0] == leaf) {
				pick = o.Index
			}
		}
		if pick < 0 {
			b.Fatalf("booking %d: no feasible option", i)
		}
		if _, err := c.Approve(now, req.ID, pick, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(uint64(gpus), 13))
	running := make([]calendar.Running, 0, f.NumNodes())
	for node := range topology.NodeID(f.NumNodes()) {
		w := calendar.Running{ID: fmt.Sprintf("w%06d", node), Nodes: []placement.NodeGPUs{{Node: node, GPUs: 8}}}
		switch r.IntN(3) {
		case 0:
			w.Queue = "prod-inference"
		case 1:
			w.Queue, w.Preemptible = "research", true
			w.End = now.Add(time.Duration(r.IntN(48*60)) * time.Minute)
		default:
			w.Queue, w.Preemptible, w.Borrowing = "batch", true, true
			w.End = now.Add(time.Duration(r.IntN(48*60)) * time.Minute)
		}
		running = append(running, w)
	}
	return c, running, now
}

// BenchmarkPropose asks for one 512-GPU spine for two days, starting a day
// ahead, against n approved leaf bookings (some overlapping the window)
// and a full running view.
func BenchmarkPropose(b *testing.B) {
	for _, gpus := range shapes.Ladder() {
		for _, n := range []int{0, 50, 500} {
			b.Run(fmt.Sprintf("gpus=%d/bookings=%d", gpus, n), func(b *testing.B) {
				c, running, now := benchCalendar(b, gpus, n)
				req := calendar.Request{ID: "pretrain", Queue: "research", Flavor: "H100", GPUs: 512, Level: "spine",
					Start: now.Add(24 * time.Hour), Duration: 48 * time.Hour}
				lat := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					t := time.Now()
					if _, err := c.Propose(now, req, running); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t))
				}
				b.StopTimer()
				benchlat.ReportP99(b, lat)
			})
		}
	}
}
