//go:build !fleetverify

package fleet

import "github.com/fleetsched/fleet/quota"

// verifyQuotaRefusals is false: a kept quota refusal is trusted
// (quotamemo_verify.go asks the tree again under -tags fleetverify).
const verifyQuotaRefusals = false

func checkQuotaRefusal(kept, got quota.Verdict) {}
