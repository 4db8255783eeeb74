package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/quota"
)

// splitGroups gives the reference config's first queue a cpu group of
// its own beside its GPUs.
func splitGroups(cfg *fleet.Config) quota.NodeSpec {
	cfg.Quota.Flavors = append(cfg.Quota.Flavors, "default")
	cfg.Quota.Resources = []string{"cpu"}
	for i, n := range cfg.Quota.Nodes {
		if n.Kind != quota.Queue {
			continue
		}
		n.Quotas = append(n.Quotas, quota.FlavorQuota{Flavor: "default", Resources: []quota.ResourceQuota{{Name: "cpu", Nominal: 1000}}})
		n.ResourceGroups = []quota.ResourceGroup{
			{GPUs: true, Flavors: []string{n.Quotas[0].Flavor}},
			{Resources: []string{"cpu"}, Flavors: []string{"default"}},
		}
		cfg.Quota.Nodes[i].Quotas = n.Quotas
		return n
	}
	panic("no queue")
}

func TestNewRefusesResourceGroupsThatSplitAQueuesResources(t *testing.T) {
	cfg := fleet.ReferenceConfig()
	n := splitGroups(&cfg)
	for i := range cfg.Quota.Nodes {
		if cfg.Quota.Nodes[i].Name == n.Name {
			cfg.Quota.Nodes[i] = n
		}
	}
	_, err := fleet.New(cfg)
	require.Error(t, err)
	assert.ErrorIs(t, err, fleet.ErrInvalidConfig)
	assert.ErrorIs(t, err, fleet.ErrUnsupportedGroups)
	assert.Contains(t, err.Error(), n.Name)
}

func TestSetQueueRefusesResourceGroupsThatSplitAQueuesResources(t *testing.T) {
	cfg := fleet.ReferenceConfig()
	split := splitGroups(&cfg)
	// One group covering GPUs and cpu is what the scheduler charges: fine.
	whole := split
	whole.ResourceGroups = []quota.ResourceGroup{{GPUs: true, Resources: []string{"cpu"},
		Flavors: []string{split.Quotas[0].Flavor, "default"}}}
	for i := range cfg.Quota.Nodes {
		if cfg.Quota.Nodes[i].Name == whole.Name {
			cfg.Quota.Nodes[i] = whole
		}
	}
	s, err := fleet.New(cfg)
	require.NoError(t, err)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	before := s.Snapshot().Quota
	err = s.SetQueue(now, split)
	require.Error(t, err)
	assert.ErrorIs(t, err, fleet.ErrInvalidQuota)
	assert.ErrorIs(t, err, fleet.ErrUnsupportedGroups)
	assert.Equal(t, before, s.Snapshot().Quota, "refused whole")
}
