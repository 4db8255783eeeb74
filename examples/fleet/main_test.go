package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
	"github.com/fleetsched/fleet/sim"
)

func small(out string) options {
	return options{days: 1, seed: 1, seeds: 2, gpus: 512, policy: "both", out: out, full: true}
}

// Without -full the table keeps the headline figures and says how to see
// the rest; the progress lines reach stderr, ending at every day done.
func TestDefaultTableIsTheHeadline(t *testing.T) {
	o := small("")
	o.full, o.seeds, o.days = false, 1, 2
	var out, errs bytes.Buffer
	require.NoError(t, run(o, &out, &errs))
	assert.Contains(t, out.String(), "preemption tax")
	assert.Contains(t, out.String(), "queue wait p90")
	assert.NotContains(t, out.String(), "hot-swap lost work")
	assert.Contains(t, out.String(), "-full prints every row")
	assert.Contains(t, errs.String(), "simulated 0 of 4 days (0%)")
	assert.Contains(t, errs.String(), "simulated 4 of 4 days (100%)")
	assert.NotContains(t, errs.String(), "\r", "stderr is not a terminal here")
}

func TestRunWritesTableAndFiles(t *testing.T) {
	dir := t.TempDir()
	var out, errs bytes.Buffer
	require.NoError(t, run(small(dir), &out, &errs))
	for _, row := range []string{"idle inference guarantee", "lent by inference", "preemption tax", "work since checkpoint",
		"restarts", "node losses", "stranded GPUs", "inference capacity back", "queue wait p90", "training+batch gained"} {
		assert.Contains(t, out.String(), row)
	}
	assert.Contains(t, out.String(), "seeds 1-2, median (range)")
	assert.Contains(t, errs.String(), "events")
	for _, f := range []string{"review-static.md", "review-borrow.md"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err, f)
		assert.True(t, strings.HasPrefix(string(b), "# "), f)
	}
	for _, chart := range []string{"day", "stranded", "capacity-back", "wait", "drains"} {
		for _, p := range []string{"static", "borrow"} {
			b, err := os.ReadFile(filepath.Join(dir, chart+"-"+p+".png"))
			require.NoError(t, err)
			assert.True(t, bytes.HasPrefix(b, []byte("\x89PNG")), chart)
		}
	}
}

// The console fits 100 columns, and no figure is a negative zero.
func TestTableFitsAndCarriesUnits(t *testing.T) {
	var out, errs bytes.Buffer
	require.NoError(t, run(small(""), &out, &errs))
	for _, line := range strings.Split(out.String(), "\n") {
		assert.LessOrEqual(t, len([]rune(line)), 100, line)
		assert.NotContains(t, line, "-0 ", line)
		assert.NotContains(t, line, "$-", line)
	}
}

// The same seeds give the same table, byte for byte, whatever order the
// parallel runs end in.
func TestSameSeedsSameTable(t *testing.T) {
	var a, b, errs bytes.Buffer
	require.NoError(t, run(small(""), &a, &errs))
	require.NoError(t, run(small(""), &b, &errs))
	assert.Equal(t, a.String(), b.String())
}

// The console's preemption tax is the review's: one computation feeds both.
func TestConsoleTaxIsReviewTax(t *testing.T) {
	dir := t.TempDir()
	o := small(dir)
	o.seeds, o.policy = 1, "borrow"
	var out, errs bytes.Buffer
	require.NoError(t, run(o, &out, &errs))
	md, err := os.ReadFile(filepath.Join(dir, "review-borrow.md"))
	require.NoError(t, err)
	var review string
	section := strings.SplitN(string(md), "## Borrowing and preemption tax", 2)
	require.Len(t, section, 2)
	for _, line := range strings.Split(section[1], "\n") {
		if strings.HasPrefix(line, "| fleet |") {
			cells := strings.Split(line, "|")
			review = strings.TrimSpace(cells[5])
			break
		}
	}
	require.NotEmpty(t, review, "no fleet row in the borrowing table")
	var console string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "preemption tax") {
			console = strings.Fields(line)[len(strings.Fields(line))-2]
		}
	}
	assert.Equal(t, review, console)
}

func TestFormatUnits(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		u    unit
		want string
	}{
		{-0.0001, percent, "0.0%"},
		{-400, signedGPUHours, "0k GPU-h"},
		{-3400, signedGPUHours, "-3k GPU-h"},
		{298000, signedGPUHours, "+298k GPU-h"},
		{-1000, signedDollars, "-$1k"},
		{-100, signedDollars, "$0k"},
		{0, hours, "0 s"},
		{102, hours, "1.7 min"},
		{640, gpuHours, "640 GPU-h"},
		{737000, dollars, "$737k"},
		{1.5e6, dollars, "$1.50M"},
	} {
		assert.Equal(t, tc.want, format(tc.v, tc.u), "%v", tc.v)
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	var out, errs bytes.Buffer
	for _, o := range []options{
		{days: 1, seeds: 1, gpus: 512, policy: "greedy"},
		{days: 0, seeds: 1, gpus: 512, policy: "both"},
		{days: 1, seeds: 0, gpus: 512, policy: "both"},
		{days: 1, seeds: 1, gpus: 512, policy: "both", load: 1.1},
		{days: 1, seeds: 1, gpus: 512, policy: "both", trace: filepath.Join(t.TempDir(), "missing.csv")},
	} {
		assert.Error(t, run(o, &out, &errs), "%+v", o)
	}
}

// A trace run at a load target prints its offered load (the sample holds
// a day of jobs, so it cannot offer more than about its recorded load).
func TestTraceLoadPrinted(t *testing.T) {
	var out, errs bytes.Buffer
	o := options{days: 1, seed: 1, seeds: 1, gpus: 512, policy: "borrow",
		trace: filepath.Join("..", "..", "sim", "testdata", "philly-sample.csv"), load: 0.5}
	require.NoError(t, run(o, &out, &errs))
	assert.Regexp(t, `offered load 10\d GPUs = 0\.5\dx the non-inference capacity \(212 GPUs\)`, out.String())
}

// A seed whose figures stand far from the others' median is named under
// the table, so a median does not hide it.
func TestApartNamesTheOddSeed(t *testing.T) {
	var runs []*outcome
	for _, done := range []int{900, 920, 250} {
		r := &sim.Result{Hours: 720, GPUs: 2048}
		r.Completed[gang.Training] = done
		runs = append(runs, &outcome{res: r})
	}
	lines := apart(options{seed: 4}, runs, nil)
	require.Len(t, lines, 2)
	assert.Equal(t, "static split, seed 6 stands apart: training jobs done 250 jobs against a median of 900 jobs", lines[1])
	assert.Empty(t, apart(options{seed: 4}, runs[:2], nil), "two seeds have no median to stand apart from")
}
