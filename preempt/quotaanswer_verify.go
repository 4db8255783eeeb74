//go:build fleetverify

package preempt

import "fmt"

// Built with -tags fleetverify, a request the per-queue sums prove short
// of quota (quotaOutOfReach) is searched all the same, and the first
// difference panics: the searches must find no plan and answer
// WhyQuota.
const verifyQuotaAnswers = true

func checkQuotaAnswer(id string, why Why, np *NoPlan) {
	switch {
	case np != nil:
		panic(fmt.Sprintf("preempt: %s: the sums said quota is out of reach, and a search refused: %v", id, np))
	case why == 0:
		panic(fmt.Sprintf("preempt: %s: the sums said quota is out of reach, and a search found a plan", id))
	case why != WhyQuota:
		panic(fmt.Sprintf("preempt: %s: the sums said quota is out of reach, and the searches said %v", id, why))
	}
}
