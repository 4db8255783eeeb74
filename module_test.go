package fleet

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A controller that imports the core gets this module's requirements in
// its module graph, and minimal version selection raises its own pins to
// them. So the core module requires nothing a Kubernetes controller keeps
// in lockstep or would not want: no k8s.io or sigs.k8s.io module and no
// Prometheus client. The importers and metrics/prom are modules of their
// own (see go.work).
func TestCoreModuleRequiresNoKubernetesOrPrometheus(t *testing.T) {
	data, err := os.ReadFile("go.mod")
	require.NoError(t, err)
	forbidden := []string{"k8s.io/", "sigs.k8s.io/", "github.com/prometheus/"}
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) < 2 {
			continue
		}
		for _, prefix := range forbidden {
			assert.False(t, strings.HasPrefix(f[0], prefix), "go.mod:%d requires %s", i+1, f[0])
		}
	}

	work, err := os.ReadFile("go.work")
	require.NoError(t, err)
	for _, dir := range []string{"./importer", "./metrics/prom"} {
		assert.Contains(t, string(work), "\t"+dir+"\n", "go.work uses %s", dir)
	}
}
