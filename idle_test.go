package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/gang"
)

// idleScheduler runs, on liveConfig's fleet with both nodes in service, a
// notebook "nb" (idle rule: 2 h) and a service "svc" (no rule), both
// started at t0.
func idleScheduler(t *testing.T) *fleet.Scheduler {
	t.Helper()
	s, err := fleet.New(liveConfig())
	require.NoError(t, err)
	require.NoError(t, s.AddNode(t0, "node-0-1"))
	n := quotaNode(t, s, "team")
	n.Quotas[0].Nominal = 16
	require.NoError(t, s.SetQueue(t0, n))
	require.NoError(t, s.Submit(t0, job("nb", "notebooks", "notebook", 4)))
	require.NoError(t, s.Submit(t0, job("svc", "team", "service", 4)))
	require.Len(t, s.Schedule(t0).Admit, 2)
	return s
}

func TestIdleRuleDrainsWorkIdlePastItsLimitUnderTheDrainContract(t *testing.T) {
	s := idleScheduler(t)
	idle := t0.Add(10 * time.Minute)
	require.NoError(t, s.ReportUsage(idle, "nb", false))
	require.NoError(t, s.ReportUsage(idle, "svc", false))
	require.NoError(t, s.ReportUsage(idle.Add(time.Hour), "nb", false)) // still idle: the clock does not restart
	since, ok := s.IdleSince("nb")
	require.True(t, ok)
	assert.Equal(t, idle, since)

	assert.Empty(t, s.Schedule(idle.Add(2*time.Hour-time.Second)).Drain)
	due := idle.Add(2 * time.Hour)
	d := s.Schedule(due)
	require.Equal(t, []fleet.Drain{{ID: "nb", Deadline: due.Add(time.Minute), Reason: gang.DrainIdle}}, d.Drain)
	require.Len(t, d.Events, 1)
	assert.Equal(t, fleet.EventDrainStarted, d.Events[0].Kind)
	assert.Equal(t, "idle", d.Events[0].Reason)
	_, ok = s.IdleSince("nb")
	assert.False(t, ok)

	// Past the deadline every cycle asks for a kill until it exits.
	assert.Empty(t, s.Schedule(due.Add(30*time.Second)).Kill)
	for _, at := range []time.Duration{time.Minute, 2 * time.Minute} {
		k := s.Schedule(due.Add(at)).Kill
		require.Len(t, k, 1)
		assert.Equal(t, gang.DrainIdle, k[0].Reason)
	}
	require.NoError(t, s.Exited(due.Add(3*time.Minute), "nb", gang.ExitKilled))
	// A class without a rule is never drained for idling.
	assert.Empty(t, s.Schedule(due.Add(10*time.Hour)).Drain)
}

func TestBusyReportRestartsTheIdleClock(t *testing.T) {
	for _, tt := range []struct {
		name    string
		reports []struct {
			at   time.Duration
			busy bool
		}
		drainAt time.Duration // 0: never within 10 h
	}{
		{"never reported", nil, 0},
		{"busy only", []struct {
			at   time.Duration
			busy bool
		}{{time.Minute, true}}, 0},
		{"idle then busy", []struct {
			at   time.Duration
			busy bool
		}{{time.Minute, false}, {time.Hour, true}}, 0},
		{"idle, busy, idle again", []struct {
			at   time.Duration
			busy bool
		}{{time.Minute, false}, {time.Hour, true}, {3 * time.Hour, false}}, 5 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := idleScheduler(t)
			for _, r := range tt.reports {
				require.NoError(t, s.ReportUsage(t0.Add(r.at), "nb", r.busy))
			}
			var drained time.Duration
			for at := 4 * time.Hour; at <= 10*time.Hour && drained == 0; at += time.Hour {
				if len(s.Schedule(t0.Add(at)).Drain) > 0 {
					drained = at
				}
			}
			assert.Equal(t, tt.drainAt, drained)
		})
	}
}

func TestReportUsageRefusalsLeaveStateUnchanged(t *testing.T) {
	for _, tt := range []struct {
		name string
		now  time.Time
		id   string
		err  error
	}{
		{"unknown workload", t0, "nobody", fleet.ErrUnknownID},
		{"pending workload", t0, "waiting", fleet.ErrBadState},
		{"time reversed", t0.Add(-time.Second), "nb", fleet.ErrTimeReversed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := idleScheduler(t)
			require.NoError(t, s.Submit(t0, job("waiting", "team", "service", 8)))
			before := s.Snapshot()
			require.ErrorIs(t, s.ReportUsage(tt.now, tt.id, false), tt.err)
			assert.Equal(t, before, s.Snapshot())
		})
	}
}

func TestNewRefusesBadIdleRules(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rules []fleet.IdleRule
	}{
		{"unknown class", []fleet.IdleRule{{Class: "nobody", After: time.Hour}}},
		{"two rules for a class", []fleet.IdleRule{{Class: "notebook", After: time.Hour}, {Class: "notebook", After: 2 * time.Hour}}},
		{"no limit", []fleet.IdleRule{{Class: "notebook"}}},
		{"negative grace", []fleet.IdleRule{{Class: "notebook", After: time.Hour, Grace: -time.Second}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := liveConfig()
			cfg.Policy.IdleReclaim = tt.rules
			_, err := fleet.New(cfg)
			assert.ErrorIs(t, err, fleet.ErrInvalidConfig)
		})
	}
}

func TestIdleRuleGraceOverridesTheContract(t *testing.T) {
	cfg := liveConfig()
	cfg.Policy.IdleReclaim[0].Grace = 10 * time.Minute
	cfg.Topology.Nodes[1].Absent = false
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	require.NoError(t, s.Submit(t0, job("nb", "notebooks", "notebook", 4)))
	require.Len(t, s.Schedule(t0).Admit, 1)
	require.NoError(t, s.ReportUsage(t0, "nb", false))
	d := s.Schedule(t0.Add(2 * time.Hour))
	require.Len(t, d.Drain, 1)
	assert.Equal(t, t0.Add(2*time.Hour+10*time.Minute), d.Drain[0].Deadline)
}
