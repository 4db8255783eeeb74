package gang_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fleetsched/fleet/gang"
)

func TestJSONRoundTrip(t *testing.T) {
	for _, w := range []gang.Workload{training(), replica()} {
		t.Run(w.ID, func(t *testing.T) {
			b, err := json.Marshal(w)
			require.NoError(t, err)
			var got gang.Workload
			require.NoError(t, json.Unmarshal(b, &got))
			assert.Equal(t, w, got)
		})
	}
}

func TestJSONShape(t *testing.T) {
	b, err := json.Marshal(replica())
	require.NoError(t, err)
	assert.JSONEq(t, `{
		"id": "chat-7", "queue": "prod", "priority": 1000, "shape": "inference",
		"podSets": [{"name": "main", "count": 4, "gpusPerPod": 2}],
		"spread": {"maxPerNode": 1, "maxPerDomain": 2, "level": "leaf"}
	}`, string(b))

	for _, s := range []gang.Shape{gang.Inference, gang.Training, gang.Batch} {
		text, err := s.MarshalText()
		require.NoError(t, err)
		var back gang.Shape
		require.NoError(t, back.UnmarshalText(text))
		assert.Equal(t, s, back)
	}
	_, err = gang.Shape(7).MarshalText()
	assert.ErrorIs(t, err, gang.ErrInvalid)

	var w gang.Workload
	err = json.Unmarshal([]byte(`{"shape":"serving"}`), &w)
	assert.ErrorIs(t, err, gang.ErrInvalid)
	require.NoError(t, json.Unmarshal([]byte(`{"shape":""}`), &w))
	assert.Equal(t, gang.Shape(0), w.Shape)
	assert.Equal(t, "Shape(0)", w.Shape.String())
}

// FuzzWorkloadJSON decodes arbitrary bytes as a workload and validates it:
// nothing may panic, and a valid workload must re-encode to the same JSON.
func FuzzWorkloadJSON(f *testing.F) {
	for _, w := range []gang.Workload{training(), replica()} {
		b, err := json.Marshal(w)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte(`{"id":"x","queue":"q","shape":"batch","podSets":[{"name":"a","count":9223372036854775807,"gpusPerPod":9223372036854775807}]}`))
	f.Add([]byte(`{"id":"x","queue":"q","shape":"batch","podSets":[{"name":"a","count":3,"gpusPerPod":1}],"topology":{"segment":{"size":0}}}`))
	f.Add([]byte(`{"podSets":[{}],"topology":{"required":"node","segment":{"size":-1,"level":"node"}},"drain":{"gracePeriod":-1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var w gang.Workload
		if json.Unmarshal(data, &w) != nil {
			return
		}
		_ = w.GPUs() + w.Pods() + w.SegmentedPodSet()
		_ = w.WholeNode(8)
		_ = w.ValidateFor(refLevels, 8)
		_ = w.ValidateFor(nil, 0)
		if err := w.Validate(); err != nil {
			var fe *gang.FieldError
			require.ErrorAs(t, err, &fe)
			return
		}
		c := w.Clone()
		b1, err := json.Marshal(&c)
		require.NoError(t, err)
		var back gang.Workload
		require.NoError(t, json.Unmarshal(b1, &back))
		b2, err := json.Marshal(&back)
		require.NoError(t, err)
		require.Equal(t, string(b1), string(b2))
		require.NoError(t, back.Validate())
	})
}
