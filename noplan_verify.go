//go:build fleetverify

package fleet

import (
	"fmt"
	"reflect"
	"time"
)

// Built with -tags fleetverify, the scheduler searches again wherever a
// kept answer that no plan exists stands (noplan.go), and panics on the
// first difference: the kept verdict must be the one a search leaves.
const verifyNoPlans = true

func checkNoPlan(id string, kept, got waitVerdict, found bool) {
	kept.cycle, kept.at = 0, time.Time{}
	got.cycle, got.at = 0, time.Time{}
	if found {
		panic(fmt.Sprintf("fleet: %s: a kept answer said no plan exists, and a search found one", id))
	}
	if !reflect.DeepEqual(kept, got) {
		panic(fmt.Sprintf("fleet: %s: the kept verdict\n%+v\ndiffers from the search's\n%+v", id, kept, got))
	}
}
