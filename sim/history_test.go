package sim

import (
	"testing"
	"time"
)

// The model fitted to a run's history is close to the model that ran.
func TestHistoryFitsTheModel(t *testing.T) {
	t.Parallel()
	var h History
	if _, err := Run(Config{Seed: 2, Duration: 4 * 24 * time.Hour, Observer: &h}); err != nil {
		t.Fatal(err)
	}
	w := h.Workload(2048)
	t.Logf("%+v", w)
	near := func(name string, got, want, tol float64) {
		if got < want*(1-tol) || got > want*(1+tol) {
			t.Errorf("%s: fitted %.3f, ran %.3f", name, got, want)
		}
	}
	near("inference trough", w.InferenceTrough, 500.0/2048, 0.15)
	near("inference peak", w.InferencePeak, 1200.0/2048, 0.15)
	near("trough hours", w.TroughHours, 12, 0.25)
	near("training median h", w.TrainingMedian.Hours(), 6, 0.5)
	near("batch median min", w.BatchMedian.Minutes(), 45, 0.5)
	near("training load", w.TrainingLoad, 0.55, 0.5)
}
