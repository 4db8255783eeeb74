//go:build !fleetverify

package preempt

// verifyQuotaAnswers is false: a request the per-queue sums prove short
// of quota is answered without a search (quotaanswer_verify.go searches
// anyway under -tags fleetverify, and compares).
const verifyQuotaAnswers = false

func checkQuotaAnswer(string, Why, *NoPlan) {}
