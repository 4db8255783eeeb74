//go:build fleetverify

package fleet

import (
	"fmt"
	"reflect"

	"github.com/fleetsched/fleet/quota"
)

// Built with -tags fleetverify, the scheduler asks the tree again
// wherever a kept quota refusal answers (quotamemo.go), and panics on
// the first difference.
const verifyQuotaRefusals = true

func checkQuotaRefusal(kept, got quota.Verdict) {
	if !reflect.DeepEqual(kept, got) {
		panic(fmt.Sprintf("fleet: the kept quota refusal\n%+v\ndiffers from the tree's verdict\n%+v", kept, got))
	}
}
