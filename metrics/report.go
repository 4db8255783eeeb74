package metrics

import (
	"math"
	"sort"
	"time"

	"github.com/fleetsched/fleet/gang"
)

// Report holds every figure for one window. It is plain data: compare it,
// store it, render it with WriteMarkdown or WriteCSV. GPU-hours and
// dollars are additive: a window's figure is the sum of its parts'.
type Report struct {
	// From and To bound the window, rounded out to whole buckets.
	From, To time.Time
	// Fleet sums every team; its HealthyGPUHours come from snapshots.
	Fleet Usage
	// Teams has one row per team (queue) seen, by name.
	Teams []TeamUsage
	// Cohorts rolls the teams up into every cohort above them in the
	// quota tree (as the latest snapshot has it), by name: a cohort's row
	// sums the teams below it, at any depth.
	Cohorts []TeamUsage
	// Shapes has one row per workload shape seen, in gang.Shape order.
	Shapes []ShapeUsage
	// Waits are queue-wait quantiles of the admissions in the window.
	Waits Waits
	// Preemptions has one row per team and cause, by team then cause:
	// what the preemption tax is made of.
	Preemptions []Preemptions
	// NodeLosses has one row per team whose runs a failed node ended
	// (cause CauseNodeLost). They are not preemptions and not in the tax.
	NodeLosses []Preemptions
	// Drains are the drains that gave their capacity back in the window.
	Drains Drains
	// Fragmentation is the time-weighted free-capacity picture.
	Fragmentation Fragmentation
	// Uplinks has one row per leaf that gangs spanning several leaves
	// crossed in the window, in the order first seen: how many shared its
	// uplinks.
	Uplinks []LeafUplinks
	// Hourly is one point per bucket of the window, for charts.
	Hourly []Point
	// RightSizeTarget is the SM activity the right-sizing advice sizes
	// inference for (Config.RightSizeTarget).
	RightSizeTarget float64
}

// Usage is the additive account of a team, a shape or the fleet. Real use
// (Used, UsefulPFLOP) sits beside allocation and is never folded into it:
// an allocated GPU is not a busy one.
type Usage struct {
	HealthyGPUHours float64 // fleet only: healthy capacity, from snapshots

	AllocatedGPUHours float64 // GPU-hours held by workloads
	SampledGPUHours   float64 // allocated hours covered by usage samples
	UsedGPUHours      float64 // SM-activity weighted
	UsefulPFLOP       float64 // MFU x peak, in 10^15 FLOPs
	// IdleGPUHours are allocated hours whose SM activity stayed under the
	// idle threshold for longer than the idle window.
	IdleGPUHours float64

	BorrowedGPUHours float64 // held above the team's nominal quota
	LentGPUHours     float64 // the team's unused quota others borrowed
	// IdleReservedGPUHours is guaranteed quota that was neither used nor lent.
	IdleReservedGPUHours float64
	// LostGPUHours is what preemptions threw away: the victims' work
	// since their last checkpoint, and their restarts (RestartGPUHours).
	LostGPUHours, RestartGPUHours float64
	// NodeLostGPUHours is the same for runs ended by failed nodes; a
	// stateless inference replica loses only its restart and warm-up.
	NodeLostGPUHours float64

	CrossSpineGPUHours float64 // allocated to gangs spanning spines

	// LowMFUGPUHours are allocated hours of busy work under its MFU floor
	// past the window (Config.MFUFloor): busy, but inefficient.
	LowMFUGPUHours float64
	// RightSizeGPUHours are inference GPU-hours beyond what the observed
	// use needed at Config.RightSizeTarget, hour by hour: what running
	// fewer replicas (or fewer GPUs per replica) would save.
	RightSizeGPUHours float64

	// Counts over the window: workloads submitted, admitted, preempted,
	// killed at their drain deadline, admitted across spines, and runs a
	// lost node ended.
	Submissions, Admissions, Preemptions, Kills, CrossSpineGangs, NodeLosses int64

	// HotSwaps counts lost pods moved to a replacement node while their
	// gang ran on; HotSwapWaitHours sums the time each waited, and
	// HotSwapSavedGPUHours is the work (since the last checkpoint, plus
	// restart) the rest of those gangs would have lost had they failed
	// whole. The lost pods' own share is in NodeLostGPUHours.
	HotSwaps             int64
	HotSwapWaitHours     float64
	HotSwapSavedGPUHours float64

	// OverflowGPUHours is what guaranteed inference queues were short of
	// (Decisions.Overflow), and OverflowDollars its cost at
	// Config.ExternalDollarsPerGPUHour: the traffic sent to an external
	// provider.
	OverflowGPUHours float64
	OverflowDollars  float64

	// Cost, at each flavor's price.
	AllocatedDollars       float64
	IdleReservationDollars float64 // IdleReservedGPUHours priced
	RecoveredDollars       float64 // BorrowedGPUHours priced: value lending recovered
	RightSizeDollars       float64 // RightSizeGPUHours priced
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// AllocationRate is allocated over healthy GPU-hours (fleet only; 0 when
// no snapshot covered the window).
func (u Usage) AllocationRate() float64 { return ratio(u.AllocatedGPUHours, u.HealthyGPUHours) }

// UseRate is SM-activity weighted over allocated GPU-hours, among the
// sampled hours: how busy allocated GPUs really were.
func (u Usage) UseRate() float64 { return ratio(u.UsedGPUHours, u.SampledGPUHours) }

// PreemptionTax is lost over borrowed GPU-hours: what borrowing cost in
// work thrown away (0 without borrowing). Node losses are not in it.
func (u Usage) PreemptionTax() float64 { return ratio(u.LostGPUHours, u.BorrowedGPUHours) }

// DollarsPerPFLOP is the allocated cost per useful PFLOP (0 without MFU
// or FLOP/s samples).
func (u Usage) DollarsPerPFLOP() float64 { return ratio(u.AllocatedDollars, u.UsefulPFLOP) }

func (u *Usage) addSums(s *sums, price Flavor, rightSize float64) {
	const h = 3600.0
	u.RestartGPUHours += s.Restart / h
	u.NodeLostGPUHours += s.NodeLost / h
	u.NodeLosses += s.NodeLosses
	u.HotSwaps += s.HotSwaps
	u.HotSwapWaitHours += s.HotSwapWait / h
	u.HotSwapSavedGPUHours += s.HotSwapSaved / h
	u.OverflowGPUHours += s.Overflow / h
	u.OverflowDollars += s.Overflow / h * price.ExternalDollarsPerGPUHour
	u.LowMFUGPUHours += s.LowMFU / h
	u.RightSizeGPUHours += rightSize / h
	u.RightSizeDollars += rightSize / h * price.DollarsPerGPUHour
	u.AllocatedGPUHours += s.Allocated / h
	u.SampledGPUHours += s.Sampled / h
	u.UsedGPUHours += s.Used / h
	u.UsefulPFLOP += s.UsefulFLOP / 1e15
	u.IdleGPUHours += s.Idle / h
	u.BorrowedGPUHours += s.Borrowed / h
	u.LentGPUHours += s.Lent / h
	u.IdleReservedGPUHours += s.IdleReserved / h
	u.LostGPUHours += s.Lost / h
	u.CrossSpineGPUHours += s.CrossSpine / h
	u.Submissions += s.Submissions
	u.Admissions += s.Admissions
	u.Preemptions += s.Preemptions
	u.Kills += s.Kills
	u.CrossSpineGangs += s.CrossSpineGangs
	u.AllocatedDollars += s.Allocated / h * price.DollarsPerGPUHour
	u.IdleReservationDollars += s.IdleReserved / h * price.DollarsPerGPUHour
	u.RecoveredDollars += s.Borrowed / h * price.DollarsPerGPUHour
}

// TeamUsage is one team's row.
type TeamUsage struct {
	Team string // the queue
	Usage
}

// ShapeUsage is one shape's row.
type ShapeUsage struct {
	Shape gang.Shape // inference, training or batch
	Usage
}

// Quantiles summarise one group of durations.
type Quantiles struct {
	Key           string        // team name or gang-size class ("1-8", "9-64", "65-512", "513+")
	Count         int64         // waits recorded
	P50, P90, P99 time.Duration // the quantiles of the wait
}

// Waits are queue-wait quantiles (within 1%) per team and per gang size.
type Waits struct {
	Fleet      Quantiles   // every wait of the fleet
	ByTeam     []Quantiles // by team name
	ByGangSize []Quantiles // the four classes in order, empty ones included
}

// Preemptions counts one team's preemptions (or node losses) for one
// cause, and what they lost: the work since each victim's last checkpoint
// and the restarts. Kills are victims that missed their drain deadline.
type Preemptions struct {
	Team, Cause  string // the victims' team and the cause: preemption, reclaim, shrink, node loss...
	Count, Kills int64  // victims, and those killed at the deadline
	// LostGPUHours = LostWorkGPUHours + RestartGPUHours.
	LostGPUHours, LostWorkGPUHours, RestartGPUHours float64
}

// Drains measure the drain contract: from the drain decision to the
// victim's exit (its capacity back), and kills past the deadline.
type Drains struct {
	Count          int64         // drains decided
	P50, P99       time.Duration // from the decision to the victim's exit
	DeadlineMisses int64         // victims killed at their deadline
}

// Fragmentation is the time-weighted free-capacity picture from snapshots.
type Fragmentation struct {
	ObservedHours float64 // hours of the window covered by snapshots
	// Average GPUs over the observed hours.
	HealthyGPUs, FreeGPUs, StrandedGPUs float64
	// StrandedP50 and StrandedP99 are time-weighted percentiles of
	// stranded GPUs (within 1%).
	StrandedP50, StrandedP99 float64
	// LargestFreeBlock is, per topology level in the order first seen, the
	// largest block of fully free nodes: average, least and most.
	LargestFreeBlock []LevelBlock
	NodeDowns        int64
}

// StrandedShare is stranded over healthy GPUs, on average.
func (f Fragmentation) StrandedShare() float64 { return ratio(f.StrandedGPUs, f.HealthyGPUs) }

// LevelBlock is the largest free block of one level over a window, in nodes.
type LevelBlock struct {
	Level         string  // the level's name
	Avg, Min, Max float64 // its largest free block: time-weighted average, least and most
}

// Point is one bucket of the hourly series: average GPUs over the bucket.
type Point struct {
	Start              time.Time // the bucket's start
	InferenceAllocated float64   // GPUs inference held
	InferenceUsed      float64   // SM-activity weighted
	Training, Batch    float64   // allocated
	Borrowed           float64   // held above a queue's nominal quota
	Idle               float64   // allocated but idle
	Stranded, Free     float64   // free on partly used nodes; free in all
	Healthy            float64   // GPUs on healthy nodes
	// LargestFreeBlock is the average in nodes per level, in the order of
	// Fragmentation.LargestFreeBlock.
	LargestFreeBlock []float64
}

// Report returns the figures for [from, to), rounded out to whole
// buckets. Workloads still running and the latest snapshot count up to
// the latest input the Recorder has seen. Report changes nothing.
func (r *Recorder) Report(from, to time.Time) Report {
	width := int64(r.cfg.Bucket)
	lo := r.st.number(from.UnixNano())
	hi := r.st.number(to.UnixNano() - 1)
	if !to.After(from) {
		hi = lo - 1
	}
	hi++
	rep := Report{From: time.Unix(0, lo*width).UTC(), To: time.Unix(0, hi*width).UTC(), RightSizeTarget: r.cfg.RightSizeTarget}

	// What is still in progress goes into an overlay clipped to the window.
	ov := newStore(width, lo, hi)
	for i := range r.work {
		w := &r.work[i]
		if w.id == "" {
			continue // a free slot
		}
		r.integrate(&ov, w, r.clock)
		r.closeIdle(&ov, w, r.clock)
		r.closeLow(&ov, w, r.clock)
	}
	if r.snap.valid {
		r.integrateSnap(&ov, r.clock)
	}

	nTeams := len(r.teams.names)
	teams := make([]Usage, nTeams)
	var shapes [int(gang.Batch) + 1]Usage
	shapeSeen := [int(gang.Batch) + 1]bool{}
	teamSeen := make([]bool, nTeams)
	waitTeam := make([]sketch, nTeams)
	var waitClass [gangClasses]sketch
	var waitFleet, drain, stranded sketch
	causes := make([]causeSums, len(r.causeKey))
	levels := make([]levelSums, len(r.levels.names))
	for i := range levels {
		levels[i] = levelSums{Min: math.Inf(1), Max: math.Inf(-1)}
	}
	var fl fleetSums
	uplinks := make([]uplinkSums, len(r.leaves.names))

	for n := lo; n < hi; n++ {
		p := Point{Start: time.Unix(0, n*width).UTC(), LargestFreeBlock: make([]float64, len(levels))}
		for _, b := range [2]*bucket{r.st.get(n), ov.get(n)} {
			if b == nil {
				continue
			}
			for id := range b.cells {
				c := &b.cells[id]
				k := r.cellKeys[id]
				price := r.price[k.flavor]
				if *c != (sums{}) {
					teamSeen[k.team] = true
				}
				// Right-sizing: an hour's inference that used U GPUs at
				// the target needs U/target of them.
				var rightSize float64
				if k.shape == gang.Inference {
					rightSize = max(0, c.Sampled-c.Used/r.cfg.RightSizeTarget)
				}
				teams[k.team].addSums(c, price, rightSize)
				if k.shape >= gang.Inference && k.shape <= gang.Batch {
					shapes[k.shape].addSums(c, price, rightSize)
					if c.Allocated > 0 || c.Admissions > 0 || c.Submissions > 0 {
						shapeSeen[k.shape] = true
					}
				}
				switch k.shape {
				case gang.Inference:
					p.InferenceAllocated += c.Allocated
					p.InferenceUsed += c.Used
				case gang.Training:
					p.Training += c.Allocated
				case gang.Batch:
					p.Batch += c.Allocated
				}
				p.Borrowed += c.Borrowed
				p.Idle += c.Idle
			}
			for id := range b.causes {
				c := &causes[id]
				c.Count += b.causes[id].Count
				c.Kills += b.causes[id].Kills
				c.Work += b.causes[id].Work
				c.Restart += b.causes[id].Restart
			}
			for id := range b.waitTeam {
				waitTeam[id].merge(&b.waitTeam[id])
				waitFleet.merge(&b.waitTeam[id])
			}
			for c := range b.waitClass {
				waitClass[c].merge(&b.waitClass[c])
			}
			drain.merge(&b.drain)
			stranded.merge(&b.stranded)
			fl.Observed += b.fleet.Observed
			fl.Healthy += b.fleet.Healthy
			fl.Free += b.fleet.Free
			fl.Stranded += b.fleet.Stranded
			fl.NodeDowns += b.fleet.NodeDowns
			p.Stranded += b.fleet.Stranded
			p.Free += b.fleet.Free
			p.Healthy += b.fleet.Healthy
			addUplinks(uplinks, b)
			for id, l := range b.levels {
				if l.Seconds == 0 {
					continue
				}
				t := &levels[id]
				t.NodeSeconds += l.NodeSeconds
				t.Seconds += l.Seconds
				t.Min = min(t.Min, l.Min)
				t.Max = max(t.Max, l.Max)
				p.LargestFreeBlock[id] += l.NodeSeconds
			}
		}
		secs := float64(width) / 1e9
		for _, v := range []*float64{&p.InferenceAllocated, &p.InferenceUsed, &p.Training, &p.Batch,
			&p.Borrowed, &p.Idle, &p.Stranded, &p.Free, &p.Healthy} {
			*v /= secs
		}
		for i := range p.LargestFreeBlock {
			p.LargestFreeBlock[i] /= secs
		}
		rep.Hourly = append(rep.Hourly, p)
	}

	// Teams by name, then the fleet as their sum.
	order := make([]int, 0, nTeams)
	for id := range nTeams {
		if teamSeen[id] {
			order = append(order, id)
		}
	}
	sort.Slice(order, func(a, b int) bool { return r.teams.names[order[a]] < r.teams.names[order[b]] })
	for _, id := range order {
		rep.Teams = append(rep.Teams, TeamUsage{Team: r.teams.names[id], Usage: teams[id]})
		rep.Fleet.add(&teams[id])
		rep.Waits.ByTeam = append(rep.Waits.ByTeam, quantiles(r.teams.names[id], &waitTeam[id]))
	}
	rep.Fleet.HealthyGPUHours = fl.Healthy / 3600
	for s := gang.Inference; s <= gang.Batch; s++ {
		if shapeSeen[s] {
			rep.Shapes = append(rep.Shapes, ShapeUsage{Shape: s, Usage: shapes[s]})
		}
	}

	rep.Waits.Fleet = quantiles("fleet", &waitFleet)
	for c := range waitClass {
		rep.Waits.ByGangSize = append(rep.Waits.ByGangSize, quantiles(gangClassName(c), &waitClass[c]))
	}

	for id, c := range causes {
		if c == (causeSums{}) {
			continue
		}
		k := r.causeKey[id]
		p := Preemptions{
			Team: r.teams.names[k.team], Cause: r.reasons.names[k.reason], Count: c.Count, Kills: c.Kills,
			LostWorkGPUHours: c.Work / 3600, RestartGPUHours: c.Restart / 3600, LostGPUHours: (c.Work + c.Restart) / 3600,
		}
		if p.Cause == CauseNodeLost {
			rep.NodeLosses = append(rep.NodeLosses, p)
		} else {
			rep.Preemptions = append(rep.Preemptions, p)
		}
	}
	for _, ps := range [][]Preemptions{rep.Preemptions, rep.NodeLosses} {
		sort.Slice(ps, func(a, b int) bool {
			pa, pb := ps[a], ps[b]
			if pa.Team != pb.Team {
				return pa.Team < pb.Team
			}
			return pa.Cause < pb.Cause
		})
	}
	rep.Cohorts = r.cohorts(rep.Teams)

	rep.Drains = Drains{
		Count:          int64(math.Round(drain.total)),
		P50:            seconds(drain.quantile(0.5)),
		P99:            seconds(drain.quantile(0.99)),
		DeadlineMisses: rep.Fleet.Kills,
	}

	fr := &rep.Fragmentation
	fr.ObservedHours = fl.Observed / 3600
	fr.NodeDowns = fl.NodeDowns
	if fl.Observed > 0 {
		fr.HealthyGPUs = fl.Healthy / fl.Observed
		fr.FreeGPUs = fl.Free / fl.Observed
		fr.StrandedGPUs = fl.Stranded / fl.Observed
		fr.StrandedP50 = stranded.quantile(0.5)
		fr.StrandedP99 = stranded.quantile(0.99)
	}
	for id, l := range levels {
		b := LevelBlock{Level: r.levels.names[id]}
		if l.Seconds > 0 {
			b.Avg, b.Min, b.Max = l.NodeSeconds/l.Seconds, l.Min, l.Max
		}
		fr.LargestFreeBlock = append(fr.LargestFreeBlock, b)
	}
	rep.Uplinks = r.uplinksReport(uplinks, fl.Observed)
	return rep
}

func (u *Usage) add(o *Usage) {
	u.HealthyGPUHours += o.HealthyGPUHours
	u.AllocatedGPUHours += o.AllocatedGPUHours
	u.SampledGPUHours += o.SampledGPUHours
	u.UsedGPUHours += o.UsedGPUHours
	u.UsefulPFLOP += o.UsefulPFLOP
	u.IdleGPUHours += o.IdleGPUHours
	u.BorrowedGPUHours += o.BorrowedGPUHours
	u.LentGPUHours += o.LentGPUHours
	u.IdleReservedGPUHours += o.IdleReservedGPUHours
	u.LostGPUHours += o.LostGPUHours
	u.RestartGPUHours += o.RestartGPUHours
	u.NodeLostGPUHours += o.NodeLostGPUHours
	u.NodeLosses += o.NodeLosses
	u.HotSwaps += o.HotSwaps
	u.HotSwapWaitHours += o.HotSwapWaitHours
	u.HotSwapSavedGPUHours += o.HotSwapSavedGPUHours
	u.OverflowGPUHours += o.OverflowGPUHours
	u.OverflowDollars += o.OverflowDollars
	u.LowMFUGPUHours += o.LowMFUGPUHours
	u.RightSizeGPUHours += o.RightSizeGPUHours
	u.RightSizeDollars += o.RightSizeDollars
	u.CrossSpineGPUHours += o.CrossSpineGPUHours
	u.Submissions += o.Submissions
	u.Admissions += o.Admissions
	u.Preemptions += o.Preemptions
	u.Kills += o.Kills
	u.CrossSpineGangs += o.CrossSpineGangs
	u.AllocatedDollars += o.AllocatedDollars
	u.IdleReservationDollars += o.IdleReservationDollars
	u.RecoveredDollars += o.RecoveredDollars
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

func quantiles(key string, s *sketch) Quantiles {
	return Quantiles{
		Key: key, Count: int64(math.Round(s.total)),
		P50: seconds(s.quantile(0.5)), P90: seconds(s.quantile(0.9)), P99: seconds(s.quantile(0.99)),
	}
}

// cohorts rolls teams up into every cohort above them, by name.
func (r *Recorder) cohorts(teams []TeamUsage) []TeamUsage {
	sums := map[string]*Usage{}
	for i := range teams {
		name := teams[i].Team
		// Bounded: a cycle in a broken snapshot ends the walk.
		for range len(r.parent) {
			p, ok := r.parent[name]
			if !ok || p == "" {
				break
			}
			u := sums[p]
			if u == nil {
				u = &Usage{}
				sums[p] = u
			}
			u.add(&teams[i].Usage)
			name = p
		}
	}
	out := make([]TeamUsage, 0, len(sums))
	for name, u := range sums {
		out = append(out, TeamUsage{Team: name, Usage: *u})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Team < out[b].Team })
	return out
}
