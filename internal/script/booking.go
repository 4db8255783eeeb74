package script

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fleetsched/fleet/calendar"
)

// The calendar's commands, one handler each:
//
//	propose ID queue= gpus= level= [blocks=] [flavor=H100] start=24h duration=6h [grace=]
//	approve ID [option=0] who=
//	reject ID who= [why=]
//	cancel-booking ID who= [why=]
//	shorten-booking ID end=2h who= [why=]   (end: from now)
//	relocate-booking ID who=
//	bookings
//
// Times given as durations count from the runner's clock.
func bookingCommand(cmd string) (func(r *Runner, pos []string, kv map[string]string) (string, error), bool) {
	switch cmd {
	case "propose":
		return (*Runner).propose, true
	case "approve":
		return (*Runner).approve, true
	case "reject":
		return (*Runner).reject, true
	case "cancel-booking":
		return (*Runner).cancelBooking, true
	case "shorten-booking":
		return (*Runner).shortenBooking, true
	case "relocate-booking":
		return (*Runner).relocateBooking, true
	case "bookings":
		return (*Runner).bookings, true
	}
	return nil, false
}

// stamp is how booking times print: day and clock time.
const stamp = "Jan 2 15:04:05"

func refused(err error) (string, error) { return "error: " + err.Error() + "\n", nil }

func first(cmd string, pos []string) (string, error) {
	if len(pos) == 0 {
		return "", fmt.Errorf("%s: missing the booking ID", cmd)
	}
	return pos[0], nil
}

// after reads a duration from now.
func (r *Runner) after(cmd, key string, kv map[string]string) (time.Time, error) {
	d, err := time.ParseDuration(kv[key])
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %s: %w", cmd, key, err)
	}
	return r.Now.Add(d), nil
}

func (r *Runner) propose(pos []string, kv map[string]string) (string, error) {
	id, err := first("propose", pos)
	if err != nil {
		return "", err
	}
	req := calendar.Request{ID: id, Queue: kv["queue"], Flavor: kv["flavor"], Level: kv["level"]}
	if req.Flavor == "" {
		req.Flavor = "H100"
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{"gpus", &req.GPUs}, {"blocks", &req.Blocks}} {
		if v, ok := kv[f.key]; ok {
			if *f.dst, err = strconv.Atoi(v); err != nil {
				return "", fmt.Errorf("propose: %s: %w", f.key, err)
			}
		}
	}
	if req.Start, err = r.after("propose", "start", kv); err != nil {
		return "", err
	}
	if req.Duration, err = time.ParseDuration(kv["duration"]); err != nil {
		return "", fmt.Errorf("propose: duration: %w", err)
	}
	if g, ok := kv["grace"]; ok {
		if req.Grace, err = time.ParseDuration(g); err != nil {
			return "", fmt.Errorf("propose: grace: %w", err)
		}
	}
	opts, err := r.S.Propose(r.Now, req)
	if err != nil {
		return refused(err)
	}
	var b strings.Builder
	for _, o := range opts {
		fmt.Fprintf(&b, "option %d: %s gpus=%d stranded=%d displaced: blocking=%d guaranteed=%d borrowed=%d",
			o.Index, strings.Join(o.DomainNames, "+"), o.GPUs, o.Stranded, o.Displaced.Blocking, o.Displaced.Guaranteed, o.Displaced.Borrowed)
		if n := len(o.Displaced.Workloads); n > 0 {
			fmt.Fprintf(&b, " (%d workloads)", n)
		}
		for _, c := range o.Conflicts {
			fmt.Fprintf(&b, " conflict=%s@%s", c.Booking, c.Domain)
		}
		if o.Quota != nil {
			fmt.Fprintf(&b, " over-committed at %s", o.Quota.At.Format(stamp))
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

func renderBooking(verb string, b calendar.Booking) string {
	return fmt.Sprintf("%s %s: %s %s for %s from %s to %s, drain from %s\n", verb, b.ID, b.Level,
		strings.Join(b.Domains, "+"), b.Queue, b.Start.Format(stamp), b.End.Format(stamp), b.DrainAt().Format(stamp))
}

func (r *Runner) approve(pos []string, kv map[string]string) (string, error) {
	id, err := first("approve", pos)
	if err != nil {
		return "", err
	}
	option := 0
	if v, ok := kv["option"]; ok {
		if option, err = strconv.Atoi(v); err != nil {
			return "", fmt.Errorf("approve: option: %w", err)
		}
	}
	b, err := r.S.Approve(r.Now, id, option, kv["who"])
	if err != nil {
		return refused(err)
	}
	return renderBooking("approved", b), nil
}

func (r *Runner) reject(pos []string, kv map[string]string) (string, error) {
	id, err := first("reject", pos)
	if err != nil {
		return "", err
	}
	if err := r.S.Reject(r.Now, id, kv["who"], kv["why"]); err != nil {
		return refused(err)
	}
	return "ok\n", nil
}

func (r *Runner) cancelBooking(pos []string, kv map[string]string) (string, error) {
	id, err := first("cancel-booking", pos)
	if err != nil {
		return "", err
	}
	if err := r.S.CancelBooking(r.Now, id, kv["who"], kv["why"]); err != nil {
		return refused(err)
	}
	return "ok\n", nil
}

func (r *Runner) shortenBooking(pos []string, kv map[string]string) (string, error) {
	id, err := first("shorten-booking", pos)
	if err != nil {
		return "", err
	}
	end, err := r.after("shorten-booking", "end", kv)
	if err != nil {
		return "", err
	}
	if err := r.S.ShortenBooking(r.Now, id, end, kv["who"], kv["why"]); err != nil {
		return refused(err)
	}
	return "ok\n", nil
}

func (r *Runner) relocateBooking(pos []string, kv map[string]string) (string, error) {
	id, err := first("relocate-booking", pos)
	if err != nil {
		return "", err
	}
	b, err := r.S.RelocateBooking(r.Now, id, kv["who"])
	if err != nil {
		return refused(err)
	}
	return renderBooking("relocated", b), nil
}

func (r *Runner) bookings([]string, map[string]string) (string, error) {
	var b strings.Builder
	for _, x := range r.S.Bookings() {
		phase := "booked"
		switch {
		case !r.Now.Before(x.End):
			phase = "ended"
		case !r.Now.Before(x.Start):
			phase = "active"
		case !r.Now.Before(x.DrainAt()):
			phase = "draining"
		}
		b.WriteString(strings.TrimSuffix(renderBooking(phase, x), "\n"))
		fmt.Fprintf(&b, " (approved by %s at %s)\n", x.ApprovedBy, x.ApprovedAt.Format(stamp))
	}
	if b.Len() == 0 {
		return "(none)\n", nil
	}
	return b.String(), nil
}
