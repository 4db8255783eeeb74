package metrics

import "sort"

// TeamNow is one team's running workloads as of the latest input, in GPUs.
type TeamNow struct {
	Team      string  // the queue
	Allocated float64 // GPUs its workloads hold
	// Used is SM-activity weighted, from each workload's latest sample;
	// Sampled is the allocated GPUs that have one.
	Used, Sampled float64
	// Idle is GPUs of workloads whose activity is under the idle
	// threshold now (however briefly).
	Idle float64
}

// Now returns the live picture per team, by team name, for gauges such as
// a Prometheus exporter's. It changes nothing.
func (r *Recorder) Now() []TeamNow {
	byTeam := make([]TeamNow, len(r.teams.names))
	seen := make([]bool, len(r.teams.names))
	for i := range r.work {
		w := &r.work[i]
		if w.id == "" {
			continue
		}
		t := &byTeam[w.team]
		seen[w.team] = true
		t.Allocated += w.gpus
		if w.sampled {
			t.Sampled += w.gpus
			t.Used += w.sm * w.gpus
		}
		if w.idleSince != noIdle {
			t.Idle += w.gpus
		}
	}
	var out []TeamNow
	for id, ok := range seen {
		if ok {
			byTeam[id].Team = r.teams.names[id]
			out = append(out, byTeam[id])
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Team < out[b].Team })
	return out
}
