package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunWritesTableAndFiles(t *testing.T) {
	dir := t.TempDir()
	var out, errs bytes.Buffer
	require.NoError(t, run(options{days: 1, seed: 1, gpus: 512, policy: "both", out: dir}, &out, &errs))
	for _, row := range []string{"idle inference reservation", "GPU-h recovered by borrowing", "preemption tax",
		"stranded GPUs", "inference capacity back", "queue wait p90, research", "allocated / SM-busy / MFU"} {
		assert.Contains(t, out.String(), row)
	}
	assert.Contains(t, errs.String(), "events/s")
	for _, f := range []string{"review-static.md", "review-borrow.md", "day-static.svg", "day-borrow.svg", "stranded-borrow.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err, f)
		assert.NotEmpty(t, b, f)
	}
	md, err := os.ReadFile(filepath.Join(dir, "review-borrow.md"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(md), "# "))
}

func TestRunRefusesBadFlags(t *testing.T) {
	var out, errs bytes.Buffer
	assert.Error(t, run(options{days: 1, gpus: 512, policy: "greedy"}, &out, &errs))
	assert.Error(t, run(options{days: 0, gpus: 512, policy: "both"}, &out, &errs))
	assert.Error(t, run(options{days: 1, gpus: 512, policy: "both", trace: filepath.Join(t.TempDir(), "missing.csv")}, &out, &errs))
}
