package quota_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/quota"
)

func TestRenderShowsOverPromiseAndRules(t *testing.T) {
	th := int32(50)
	f := build(t, []string{"H100", "H200"},
		cohort("org", ""),
		cohort("ml", "org", q("H200", 4)),
		quota.NodeSpec{Name: "train", Parent: "ml", Kind: quota.Queue,
			Quotas: []quota.FlavorQuota{qb("H100", 16, 8), ql("H200", 8, 2)},
			Preemption: quota.Rules{ReclaimWithinCohort: quota.ReclaimAny,
				BorrowWithinCohort: quota.BorrowWithinCohort{Policy: quota.BorrowLowerPriority, MaxPriorityThreshold: &th}}},
	)
	var b strings.Builder
	require.NoError(t, f.tree.RenderCapacity(&b, map[string]int64{"H100": 8, "H200": 64}))
	out := b.String()
	for _, want := range []string{
		"| org   | —      | cohort | —      | 0       | —               | —             | 1      |",
		"| train | ml     | queue  | H100   | 16      | 8               | all           | 1      |",
		"| train | ml     | queue  | H200   | 8       | unlimited       | 2 (keeps 6)   | 1      |",
		"| train | Never        | Any                   | LowerPriority (victims ≤ 50) | BestEffortFIFO |",
		"| H100   | 16         | 8        | **over-promised by 8** |",
		"| H200   | 12         | 64       | 52                     |",
	} {
		assert.Contains(t, out, want)
	}
	b.Reset()
	require.NoError(t, f.tree.Render(&b))
	assert.NotContains(t, b.String(), "capacity")
}
