package kube

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// genericWorkload is what kube-apiserver and kube-scheduler v1.37 need for
// gang scheduling: the GenericWorkload feature gate (beta, off by default),
// which also enables kube-scheduler's GangScheduling plugin, and the
// scheduling.k8s.io/v1beta1 API of PodGroup and Workload.
var genericWorkload = []string{"--feature-gates=GenericWorkload=true",
	"--runtime-config=scheduling.k8s.io/v1beta1=true"}

var (
	kubeSchedOnce sync.Once
	kubeSchedPath string
	kubeSchedErr  error
)

// kubeSchedulerBinary finds kube-scheduler through the build script, built
// from the same Kubernetes version as kube-apiserver. A benchmark that
// needs it fails, never skips, when it cannot be had.
func kubeSchedulerBinary(t testing.TB) string {
	t.Helper()
	kubeSchedOnce.Do(func() {
		var out, errb bytes.Buffer
		cmd := exec.Command("bash", "hack/apiserver-binaries", "--scheduler")
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			kubeSchedErr = fmt.Errorf("hack/apiserver-binaries --scheduler: %v\n%s", err, errb.String())
			return
		}
		kubeSchedPath = filepath.Join(strings.TrimSpace(out.String()), "kube-scheduler")
	})
	require.NoError(t, kubeSchedErr, "the side-by-side benchmark needs kube-scheduler (set %s to a directory "+
		"that has it, or let the script build it)", binDirEnv)
	return kubeSchedPath
}

// startKubeScheduler runs kube-scheduler against the cluster with the
// admin token (system:masters, so RBAC allows it everything), the given
// client QPS and burst, its default profile (default-scheduler) and
// leader election on the Lease kube-system/kube-scheduler, and waits until
// it holds the Lease. gates are its --feature-gates.
func startKubeScheduler(t testing.TB, cl *cluster, qps float32, burst int, gates string) {
	t.Helper()
	bin := kubeSchedulerBinary(t)
	dir := filepath.Join(cl.dir, "kube-scheduler")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
`, cl.cfg.Host, base64.StdEncoding.EncodeToString(cl.cfg.CAData), cl.cfg.BearerToken)), 0o600))
	config := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: %v
  burst: %d
leaderElection:
  leaderElect: true
  resourceNamespace: kube-system
  resourceName: kube-scheduler
profiles:
- schedulerName: default-scheduler
`, kubeconfig, qps, burst)), 0o600))
	args := []string{"--config", config, "--bind-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(freePort(t)), "--cert-dir", dir, "--v", "1"}
	if gates != "" {
		args = append(args, "--feature-gates", gates)
	}
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(filepath.Join(dir, "kube-scheduler.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				if len(b) > 4000 {
					b = b[len(b)-4000:]
				}
				t.Logf("kube-scheduler log tail:\n%s", b)
			}
		}
	})
	eventually(t, 60*time.Second, "kube-scheduler holds its Lease", func() bool {
		l, err := cl.client.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-scheduler", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
	})
}
