package fleet_test

import (
	"bufio"
	"bytes"
	"errors"
	"testing"

	"github.com/fleetsched/fleet"
)

// FuzzReplay feeds arbitrary journals to Replay: it must never panic, and
// a refusal must be a typed error.
func FuzzReplay(f *testing.F) {
	f.Add([]byte(`{"op":"submit","time":"2026-11-01T00:00:00Z","workload":{"id":"a","queue":"batch","shape":"batch","podSets":[{"name":"p","count":2,"gpusPerPod":8}]}}
{"op":"schedule","time":"2026-11-01T00:00:10Z"}
{"op":"exited","time":"2026-11-01T01:00:00Z","id":"a","exit":1}
{"op":"health","time":"2026-11-01T01:00:00Z","node":"node-0-0-0","health":2}
`))
	f.Add([]byte(`{"op":"adopt","time":"2026-11-01T00:00:00Z","workload":{"id":"b","queue":"research","shape":"training","podSets":[{"name":"w","count":1,"gpusPerPod":8}]},"pods":[{"PodSet":"w","Index":0,"Node":"node-0-0-0","GPUs":8}]}`))
	f.Add([]byte(`{"op":"warm","time":"2026-11-01T00:00:00Z","node":"node-0-0-3","models":["llama-70b","qwen"]}
{"op":"submit","time":"2026-11-01T00:00:00Z","workload":{"id":"r","queue":"prod-inference","shape":"inference","model":"llama-70b","podSets":[{"name":"p","count":1,"gpusPerPod":4}]}}
{"op":"schedule","time":"2026-11-01T00:00:10Z"}
{"op":"warm","time":"2026-11-01T00:00:20Z","node":"nowhere","models":[""]}
`))
	f.Add([]byte("{}\n{\"op\":\"nope\"}"))
	f.Fuzz(func(t *testing.T, journal []byte) {
		_, err := fleet.Replay(fleet.ReferenceConfig(), bytes.NewReader(journal), func(fleet.Decisions) {})
		if err != nil && !errors.Is(err, fleet.ErrInvalid) && !errors.Is(err, bufio.ErrTooLong) {
			t.Fatalf("untyped error: %v", err)
		}
	})
}
