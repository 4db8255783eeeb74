package preempt_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/fleetsched/fleet/preempt"
)

// Answering WhyQuota from the per-queue sums, without a search, changes
// no plan and no refusal: two Searchers, one that always searches,
// answer the same requests alike, call after call (a Searcher keeps
// state between calls), explanations and hopeless included.
func TestQuotaOutOfReachIsAnsweredAsTheSearchesWould(t *testing.T) {
	answered := 0
	check := func(t *rapid.T, draw func(*rapid.T) (*env, preempt.Request, map[string]bool)) {
		with, without := preempt.NewSearcher(preempt.Options{}), preempt.NewSearcher(preempt.Options{})
		preempt.SetNoQuotaAnswer(without, true)
		for range rapid.IntRange(1, 3).Draw(t, "calls") {
			e, req, exclude := draw(t)
			before := preempt.QuotaAnswers(with)
			p, err := with.Victims(e.view(), req, exclude)
			q, err2 := without.Victims(e.view(), req, exclude)
			require.Equal(t, fmt.Sprint(err2), fmt.Sprint(err), "refusals")
			require.Equal(t, err2, err)
			require.Equal(t, q, p, "plans")
			require.Equal(t, preempt.Hopeless(without), preempt.Hopeless(with), "hopeless")
			if preempt.QuotaAnswers(with) > before {
				answered++
				require.ErrorIs(t, err, preempt.ErrNoPlan)
			}
			require.Zero(t, preempt.QuotaAnswers(without))
		}
	}
	onWideAndSmall(t, check)
	// How many random requests the sums answer varies from run to run;
	// TestQuotaOutOfReachIsAnsweredFromTheSums pins that they answer.
	t.Logf("%d requests answered from the sums", answered)
}

// A draining workload above the preemptor's priority, first in its
// queue's eviction order, hides none of the running work behind it from
// the per-queue sums: quota fits once the running candidate goes, and
// the request gets the plan a search finds.
func TestQuotaSumsCountRunningWorkBehindADrainingBand(t *testing.T) {
	e := newEnv(t, 1, 2, 2, 4, queue("a", "", 4, lower))
	held := e.run("held", "a", 2, time.Minute, []int{0}, []int{1})
	held.Preemptible, held.Draining = false, true
	e.run("low", "a", 0, time.Minute, []int{0}, []int{2}).Preemptible = true
	req := e.req("new", "a", 2, 1, 2, "")
	s := preempt.NewSearcher(preempt.Options{})
	p, err := s.Victims(e.view(), req, nil)
	require.NoError(t, err)
	require.Len(t, p.Victims, 1)
	require.Equal(t, "low", p.Victims[0].ID)
	require.Zero(t, preempt.QuotaAnswers(s))
}

// Queue a, of nominal 4, holds 3 GPUs of work above the preemptor's
// priority and 1 below; queue b's work, out of a's reach, fills the
// rest of every node but one GPU. A pod of 2 GPUs fits no node and
// cannot come within quota whatever is evicted: it is refused for quota
// from the sums, as a Searcher that always searches refuses it.
func TestQuotaOutOfReachIsAnsweredFromTheSums(t *testing.T) {
	e := newEnv(t, 1, 2, 2, 4, queue("a", "", 4, lower), queue("b", "", 12, lower))
	e.run("high", "a", 5, time.Minute, []int{0}, []int{3})
	e.run("low", "a", 0, time.Minute, []int{1}, []int{1})
	for n := 1; n < 4; n++ {
		e.run(fmt.Sprintf("b%d", n), "b", 5, time.Minute, []int{n}, []int{3})
	}
	s, ref, _, err := searchWithAndWithout(t, e, e.req("new", "a", 2, 1, 2, ""), preempt.SetNoQuotaAnswer)
	var np *preempt.NoPlan
	require.ErrorAs(t, err, &np)
	require.Equal(t, preempt.WhyQuota, np.Why)
	require.Equal(t, 1, preempt.QuotaAnswers(s), "answered from the sums")
	require.Zero(t, preempt.QuotaAnswers(ref))
}
