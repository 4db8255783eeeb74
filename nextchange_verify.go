//go:build fleetverify

package fleet

import (
	"fmt"
	"reflect"
)

// Built with -tags fleetverify, every cycle that NextChange said would
// decide nothing is checked, and the first that does panics: it must be
// quiet (see noteQuiet) and repeat the Overflow and Broken lists of the
// cycle before it.
const verifyNextChange = true

func checkNextChange(s *Scheduler, before quietCycle, d *Decisions) {
	switch {
	case !s.quiet.ok:
		panic(fmt.Sprintf("fleet: at %s, before NextChange, a cycle decided: %+v", s.now, *d))
	case !reflect.DeepEqual(before.overflow, s.quiet.overflow):
		panic(fmt.Sprintf("fleet: at %s, before NextChange, the overflow %+v became %+v", s.now, before.overflow, s.quiet.overflow))
	case !reflect.DeepEqual(before.broken, s.quiet.broken):
		panic(fmt.Sprintf("fleet: at %s, before NextChange, the offers %+v became %+v", s.now, before.broken, s.quiet.broken))
	}
}
