package slurm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fleetsched/fleet/hosts/host"
)

// State is what the host keeps beside Slurm, because Slurm does not
// show it: the drains in progress (when they started, their deadlines,
// reasons and beneficiaries), the nominations (the nodes held for a
// pending job while its victims drain), and the host's submission order.
// It is written, whole and atomically, before the host acts on a cycle's
// decisions, so that a host killed between the two finds what it was
// about to do.
type State struct {
	// Seq is the last submission number given.
	Seq uint64 `json:"seq"`
	// Order is each pending or running job's submission number.
	Order map[string]uint64 `json:"order,omitempty"`
	// Drains are the drains in progress, by job.
	Drains map[string]DrainNote `json:"drains,omitempty"`
	// Nominated lists, per pending job, the node of every pod.
	Nominated map[string][]string `json:"nominated,omitempty"`
	// ReadyBy is, per nominated job, when its nomination said its
	// capacity is back.
	ReadyBy map[string]time.Time `json:"readyBy,omitempty"`
}

// dropNomination forgets the nomination of job id.
func (st *State) dropNomination(id string) {
	delete(st.Nominated, id)
	delete(st.ReadyBy, id)
}

// DrainNote is one drain as the scheduler asked for it: the record every
// host keeps of a drain (its bounds, reason, beneficiaries and when a
// kill was first asked), and what only this host needs.
type DrainNote struct {
	host.DrainRecord
	// Requeue says the drain requeue-holds the job (else it was sent
	// SIGTERM and ends).
	Requeue bool `json:"requeue,omitempty"`
	// Started is when the job started as the scheduler counts it (Slurm
	// shows the next start of a job being requeued).
	Started time.Time `json:"started"`
}

// LoadState reads a state file; a missing file is the empty state.
func LoadState(path string) (State, error) {
	var st State
	if path == "" {
		return st, nil
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("slurm: state file %s: %w", path, err)
	}
	return st, nil
}

// SaveState writes the state file atomically (a temporary file renamed
// over it).
func SaveState(path string, st *State) error {
	if path == "" {
		return nil
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".fleet-slurm-state-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
