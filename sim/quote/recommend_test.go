package quote

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fleetsched/fleet/calendar"
)

func option(index int, total float64, blocking, borrowed int) Option {
	return Option{Option: calendar.Option{Index: index, Displaced: calendar.Displaced{Blocking: blocking, Borrowed: borrowed}},
		TotalDollars: total}
}

// The recommendation ranks by total cost, except that totals within the
// tie of the cheapest cost the same: then the option draining the least
// work that cannot be preempted wins, then the least work drained.
func TestRecommendTreatsCloseTotalsAsATie(t *testing.T) {
	refused := option(9, 1, 0, 0)
	refused.Refused = errors.New("guarantees exceed capacity")
	for name, c := range map[string]struct {
		opts   []Option
		tie    float64
		want   int
		reason string
	}{
		"cheapest by more than the tie":  {[]Option{option(0, 1000, 0, 0), option(1, 900, 500, 0)}, 0.01, 1, "costs the least"},
		"within the tie, fewer blocking": {[]Option{option(0, 1005, 0, 0), option(1, 1000, 500, 0)}, 0.01, 0, "drains less work"},
		"within the tie, less drained":   {[]Option{option(0, 1000, 0, 64), option(1, 1009, 0, 8)}, 0.01, 1, "drains less work"},
		"exactly at the tie's edge":      {[]Option{option(0, 1010, 0, 0), option(1, 1000, 8, 0)}, 0.01, 0, "drains less work"},
		"just past the tie's edge":       {[]Option{option(0, 1010.5, 0, 0), option(1, 1000, 8, 0)}, 0.01, 1, "costs the least"},
		"no tie: exact totals":           {[]Option{option(0, 1005, 0, 0), option(1, 1000, 500, 0)}, -1, 1, "costs the least"},
		"same drains: the cheaper":       {[]Option{option(0, 1005, 8, 0), option(1, 1000, 8, 0)}, 0.01, 1, "costs the least"},
		"refused options never win":      {[]Option{refused, option(1, 1000, 8, 0)}, 0.01, 1, "only option"},
	} {
		q := Quote{Options: c.opts, Recommended: -1}
		q.recommend(c.tie)
		assert.Equal(t, c.want, q.Recommended, name)
		assert.Contains(t, q.Reason, c.reason, name)
	}
}
