package preempt_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fleetsched/fleet/preempt"
	"github.com/fleetsched/fleet/quota"
)

// Each criterion of the eviction order decides in its direction, and an
// earlier one outranks every later one: draining, another queue, higher
// share, lower priority, lower cost, ID.
func TestEvictionOrderCriteria(t *testing.T) {
	base := preempt.OrderItem{Prio: 5, Cost: 10, ID: "m"}
	high := quota.Share{Borrowed: 4, Lendable: 8, Weight: 1}
	low := quota.Share{Borrowed: 1, Lendable: 8, Weight: 1}
	for _, c := range []struct {
		name        string
		first, then func(*preempt.OrderItem)
	}{
		{"draining first, though dearer and later", func(o *preempt.OrderItem) { o.Draining, o.Prio, o.Cost, o.ID = true, 9, 99, "z" }, nil},
		{"another queue's work first, though of higher priority", func(o *preempt.OrderItem) { o.Other, o.Prio = true, 9 }, nil},
		{"higher share first, though of higher priority", func(o *preempt.OrderItem) { o.Share, o.Prio = high, 9 },
			func(o *preempt.OrderItem) { o.Share = low }},
		{"a borrower before a queue within its quota", func(o *preempt.OrderItem) { o.Share, o.Prio = low, 9 }, nil},
		{"lower priority first, though dearer", func(o *preempt.OrderItem) { o.Prio, o.Cost, o.ID = 4, 99, "z" }, nil},
		{"lower cost first, though a later ID", func(o *preempt.OrderItem) { o.Cost, o.ID = 9, "z" }, nil},
		{"ID last", func(o *preempt.OrderItem) { o.ID = "a" }, nil},
	} {
		a, b := base, base
		c.first(&a)
		if c.then != nil {
			c.then(&b)
		}
		assert.Equal(t, -1, preempt.CompareOrder(a, b), c.name)
		assert.Equal(t, 1, preempt.CompareOrder(b, a), c.name)
	}
	assert.Equal(t, 0, preempt.CompareOrder(base, base), "equal in every criterion")
}

// Only the two strategies Kueue names are valid, and only their names
// read back: the value past the last, rendered, is refused.
func TestFairSharingStrategyNamesAreTheValidOnes(t *testing.T) {
	for _, c := range []struct {
		st    preempt.FairSharingStrategy
		valid bool
	}{
		{0, false},
		{preempt.LessThanOrEqualToFinalShare, true},
		{preempt.LessThanInitialShare, true},
		{preempt.LessThanInitialShare + 1, false},
	} {
		assert.Equal(t, c.valid, c.st.Valid(), c.st.String())
		var back preempt.FairSharingStrategy
		err := back.UnmarshalText([]byte(c.st.String()))
		if c.valid {
			assert.NoError(t, err)
			assert.Equal(t, c.st, back)
		} else {
			assert.Error(t, err, c.st.String())
		}
	}
}
