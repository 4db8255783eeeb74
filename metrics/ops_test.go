package metrics_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/metrics"
)

// A failed node ends an inference replica, a training gang and a batch
// job: what each loses follows its shape and checkpoints, and none of it
// is a preemption or part of the tax.
func TestNodeLossesFollowShapeNotTax(t *testing.T) {
	r, err := metrics.New(metrics.Config{RestartTime: 3 * time.Minute, ReplicaRestartTime: 5 * time.Minute})
	require.NoError(t, err)
	play(t, r, []step{
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "rep", Queue: "inference", Shape: gang.Inference, GPUs: 8}),
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "tr", Queue: "research", Shape: gang.Training, GPUs: 16, BorrowedGPUs: 16}),
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "ba", Queue: "batch", Shape: gang.Batch, GPUs: 2}),
		ev(fleet.Event{Kind: fleet.EventCheckpointed, Time: at(4 * time.Hour), Workload: "tr"}),
		ev(fleet.Event{Kind: fleet.EventExited, Time: at(5 * time.Hour), Workload: "rep", Exit: gang.ExitNodeLost}),
		ev(fleet.Event{Kind: fleet.EventExited, Time: at(5 * time.Hour), Workload: "tr", Exit: gang.ExitNodeLost}),
		ev(fleet.Event{Kind: fleet.EventExited, Time: at(5 * time.Hour), Workload: "ba", Exit: gang.ExitNodeLost}),
	})
	rep := r.Report(t0, at(6*time.Hour))
	assert.Empty(t, rep.Preemptions)
	assert.Zero(t, rep.Fleet.LostGPUHours)
	assert.Zero(t, rep.Fleet.PreemptionTax(), "node losses are not a preemption tax")
	for _, tc := range []struct {
		team          string
		work, restart float64
	}{
		{"batch", 2 * 5, 2 * 3.0 / 60},      // no checkpoint: the whole run
		{"inference", 0, 8 * 5.0 / 60},      // stateless: restart and warm-up only
		{"research", 16 * 1, 16 * 3.0 / 60}, // since its checkpoint an hour ago
	} {
		t.Run(tc.team, func(t *testing.T) {
			var got *metrics.Preemptions
			for i := range rep.NodeLosses {
				if rep.NodeLosses[i].Team == tc.team {
					got = &rep.NodeLosses[i]
				}
			}
			require.NotNil(t, got)
			assert.Equal(t, metrics.CauseNodeLost, got.Cause)
			assert.Equal(t, int64(1), got.Count)
			assert.InDelta(t, tc.work, got.LostWorkGPUHours, 1e-9)
			assert.InDelta(t, tc.restart, got.RestartGPUHours, 1e-9)
		})
	}
	assert.Equal(t, int64(3), rep.Fleet.NodeLosses)
	assert.InDelta(t, 10+16+(2*3+8*5+16*3)/60.0, rep.Fleet.NodeLostGPUHours, 1e-9)
	var md bytes.Buffer
	require.NoError(t, metrics.WriteMarkdown(&md, rep))
	assert.Contains(t, md.String(), "## Node losses (not preemptions, not in the tax)")
}

// A victim that checkpoints on SIGTERM loses only its restart; one that
// is killed loses its work since its latest checkpoint, drain included.
func TestDrainLossMeasuredAtExit(t *testing.T) {
	for _, tc := range []struct {
		name          string
		steps         []step
		work, restart float64
		kills         int64
	}{
		{"checkpoint on SIGTERM", []step{
			ev(fleet.Event{Kind: fleet.EventCheckpointed, Time: at(61 * time.Minute), Workload: "v"}),
			ev(fleet.Event{Kind: fleet.EventExited, Time: at(61 * time.Minute), Workload: "v", Exit: gang.ExitDrained}),
		}, 0, 8 * 3.0 / 60, 0},
		{"killed at the deadline", []step{
			ev(fleet.Event{Kind: fleet.EventKilled, Time: at(62 * time.Minute), Workload: "v"}),
			ev(fleet.Event{Kind: fleet.EventExited, Time: at(62 * time.Minute), Workload: "v", Exit: gang.ExitKilled}),
		}, 8 * 22.0 / 60, 8 * 3.0 / 60, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := metrics.New(metrics.Config{RestartTime: 3 * time.Minute})
			require.NoError(t, err)
			play(t, r, append([]step{
				ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "v", Queue: "batch", Shape: gang.Batch, GPUs: 8, BorrowedGPUs: 8}),
				ev(fleet.Event{Kind: fleet.EventCheckpointed, Time: at(40 * time.Minute), Workload: "v"}),
				ev(fleet.Event{Kind: fleet.EventDrainStarted, Time: at(60 * time.Minute), Workload: "v", Reason: "reclaim", LostGPUSeconds: 1}),
			}, tc.steps...))
			rep := r.Report(t0, at(2*time.Hour))
			require.Len(t, rep.Preemptions, 1)
			p := rep.Preemptions[0]
			assert.InDelta(t, tc.work, p.LostWorkGPUHours, 1e-9)
			assert.InDelta(t, tc.restart, p.RestartGPUHours, 1e-9)
			assert.Equal(t, tc.kills, p.Kills)
			assert.InDelta(t, (tc.work+tc.restart)/rep.Fleet.BorrowedGPUHours, rep.Fleet.PreemptionTax(), 1e-9)
		})
	}
}

// Teams roll up into every cohort above them.
func TestCohortRollUp(t *testing.T) {
	r, err := metrics.New(metrics.Config{})
	require.NoError(t, err)
	q := func(name, parent string) fleet.QueueView {
		return fleet.QueueView{Name: name, Parent: parent, IsQueue: true}
	}
	play(t, r, []step{
		snap(fleetSnap(0, 64, 64, 0, 0, fleet.QueueView{Name: "org"}, fleet.QueueView{Name: "ml", Parent: "org"},
			q("vision", "ml"), q("speech", "ml"), q("serving", "org"))),
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "a", Queue: "vision", Shape: gang.Training, GPUs: 8}),
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "b", Queue: "speech", Shape: gang.Training, GPUs: 16}),
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "c", Queue: "serving", Shape: gang.Inference, GPUs: 4}),
		snap(fleetSnap(time.Hour, 64, 36, 0, 0)),
	})
	rep := r.Report(t0, at(time.Hour))
	got := map[string]float64{}
	for _, c := range rep.Cohorts {
		got[c.Team] = c.AllocatedGPUHours
	}
	assert.Equal(t, map[string]float64{"ml": 24, "org": 28}, got)
	var md bytes.Buffer
	require.NoError(t, metrics.WriteMarkdown(&md, rep))
	assert.Contains(t, md.String(), "| ml | 24.0 |")
	assert.Contains(t, md.String(), "| cohort org | $70.00 |")
}

// Busy work under its class's MFU floor for longer than the window is
// flagged and counted; short dips and idle work are not.
func TestBusyButInefficient(t *testing.T) {
	r, err := metrics.New(metrics.Config{MFUFloor: 0.2, MFUFloors: map[string]float64{"serving": 0.05}, MFUWindow: time.Hour})
	require.NoError(t, err)
	play(t, r, []step{
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "slow", Queue: "research", Class: "train", Shape: gang.Training, GPUs: 8}),
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "dip", Queue: "research", Class: "train", Shape: gang.Training, GPUs: 8}),
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "idle", Queue: "research", Class: "train", Shape: gang.Training, GPUs: 8}),
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "srv", Queue: "inference", Class: "serving", Shape: gang.Inference, GPUs: 8}),
		obs(0, "slow", metrics.Sample{SMActivity: 0.9, MFU: 0.08}),
		obs(0, "dip", metrics.Sample{SMActivity: 0.9, MFU: 0.1}),
		obs(0, "idle", metrics.Sample{SMActivity: 0.01}),
		obs(0, "srv", metrics.Sample{SMActivity: 0.5, MFU: 0.1}),
		obs(30*time.Minute, "dip", metrics.Sample{SMActivity: 0.9, MFU: 0.4}),
		obs(3*time.Hour, "slow", metrics.Sample{SMActivity: 0.9, MFU: 0.08}),
	})
	assert.Equal(t, []metrics.Inefficiency{{ID: "slow", Queue: "research", Class: "train", GPUs: 8, MFU: 0.08, Floor: 0.2, For: 3 * time.Hour}},
		roundMFU(r.Inefficient(at(3*time.Hour))))
	rep := r.Report(t0, at(3*time.Hour))
	assert.InDelta(t, 8*3, rep.Fleet.LowMFUGPUHours, 1e-9)
	assert.Positive(t, rep.Fleet.IdleGPUHours, "idle work is flagged as idle, not as low-MFU")
}

func roundMFU(xs []metrics.Inefficiency) []metrics.Inefficiency {
	for i := range xs {
		xs[i].MFU = float64(int64(xs[i].MFU*1e9+0.5)) / 1e9
	}
	return xs
}

// Right-sizing counts, hour by hour, inference GPUs beyond what the
// observed use needs at the target activity.
func TestRightSizingInference(t *testing.T) {
	r, err := metrics.New(metrics.Config{RightSizeTarget: 0.6})
	require.NoError(t, err)
	play(t, r, []step{
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "r1", Queue: "inference", Shape: gang.Inference, GPUs: 8}),
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "r2", Queue: "inference", Shape: gang.Inference, GPUs: 8}),
		ev(fleet.Event{Kind: fleet.EventAdmitted, Time: at(0), Workload: "t", Queue: "research", Shape: gang.Training, GPUs: 8}),
		obs(0, "r1", metrics.Sample{SMActivity: 0.3}),
		obs(0, "r2", metrics.Sample{SMActivity: 0.3}),
		obs(0, "t", metrics.Sample{SMActivity: 0.1}),
		// The second hour is busy: nothing beyond need.
		obs(time.Hour, "r1", metrics.Sample{SMActivity: 0.9}),
		obs(time.Hour, "r2", metrics.Sample{SMActivity: 0.9}),
		obs(2*time.Hour, "t", metrics.Sample{SMActivity: 0.1}),
	})
	rep := r.Report(t0, at(2*time.Hour))
	// Hour 1: 16 GPUs used 4.8 GPU-h, needing 8 at 60%: 8 GPU-h beyond need.
	require.Len(t, rep.Teams, 2)
	assert.InDelta(t, 8, rep.Teams[0].RightSizeGPUHours, 1e-9)
	assert.InDelta(t, 20, rep.Teams[0].RightSizeDollars, 1e-9)
	assert.Zero(t, rep.Teams[1].RightSizeGPUHours, "training is not right-sized as inference")
	var md bytes.Buffer
	require.NoError(t, metrics.WriteMarkdown(&md, rep))
	assert.Contains(t, md.String(), "| inference | 8.0 | 25.0% | $20.00 |")
}

// Overflow events integrate into the GPU-hours a guaranteed inference
// queue was short, priced at the external provider's rate; a 0 ends it.
func TestOverflowGPUHoursArePricedExternally(t *testing.T) {
	r, err := metrics.New(metrics.Config{Default: metrics.Flavor{DollarsPerGPUHour: 2.5, ExternalDollarsPerGPUHour: 6}})
	require.NoError(t, err)
	play(t, r, []step{
		ev(fleet.Event{Kind: fleet.EventOverflow, Time: at(0), Queue: "inference", GPUs: 56}),
		ev(fleet.Event{Kind: fleet.EventOverflow, Time: at(time.Hour), Queue: "inference", GPUs: 16}),
		ev(fleet.Event{Kind: fleet.EventOverflow, Time: at(3 * time.Hour), Queue: "inference"}),
		ev(fleet.Event{Kind: fleet.EventOverflow, Time: at(5 * time.Hour), Queue: "inference"}),
	})
	rep := r.Report(t0, at(6*time.Hour))
	assert.InDelta(t, 56+2*16, rep.Fleet.OverflowGPUHours, 1e-9)
	assert.InDelta(t, 6*(56+2*16), rep.Fleet.OverflowDollars, 1e-9)
}
