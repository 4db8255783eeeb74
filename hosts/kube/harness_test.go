package kube

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/fleetsched/fleet"
	"github.com/fleetsched/fleet/hosts/host"
	"github.com/fleetsched/fleet/importer/kueue"
	"github.com/fleetsched/fleet/metrics/prom"
)

// binDirEnv names a directory of ready kube-apiserver and etcd binaries;
// without it the tests build them with hack/apiserver-binaries.
const binDirEnv = "FLEET_KUBE_BINARIES"

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// binaries finds kube-apiserver and etcd through the build script. A
// test that needs them fails, never skips, when they cannot be had.
func binaries(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		var out, errb bytes.Buffer
		cmd := exec.Command("bash", "hack/apiserver-binaries")
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			binErr = fmt.Errorf("hack/apiserver-binaries: %v\n%s", err, errb.String())
			return
		}
		binDir = strings.TrimSpace(out.String())
	})
	require.NoError(t, binErr, "the cluster tests need kube-apiserver and etcd (set %s or let the script build them)", binDirEnv)
	return binDir
}

// cluster is a kube-apiserver and its etcd on loopback.
type cluster struct {
	cfg    *rest.Config
	client kubernetes.Interface
	// dir holds the certificates and logs; bin the binaries.
	dir, bin string
}

// freePort picks a free port below the usual ephemeral range, so that no
// outgoing connection takes it before the server listens on it.
func freePort(t testing.TB) int {
	for range 100 {
		n, err := rand.Int(rand.Reader, big.NewInt(12000))
		require.NoError(t, err)
		port := 20000 + int(n.Int64())
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	require.FailNow(t, "no free port")
	return 0
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

// startCluster starts etcd and kube-apiserver for one test and stops them
// when it ends; apiserverArgs are added to kube-apiserver's flags.
func startCluster(t testing.TB, apiserverArgs ...string) *cluster {
	t.Helper()
	bin := binaries(t)
	dir := t.TempDir()

	// A self-signed serving certificate for 127.0.0.1.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile := filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	// The service-account signing key.
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	saFile := filepath.Join(dir, "sa.key")
	writePEM(t, saFile, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa))
	token := "fleet-test-token"
	tokenFile := filepath.Join(dir, "tokens.csv")
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+",admin,admin,system:masters\n"), 0o600))

	etcdPort, peerPort, apiPort := freePort(t), freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	start := func(name string, args ...string) {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		logf, err := os.Create(filepath.Join(dir, name+".log"))
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
					t.Logf("%s log tail:\n%s", name, b)
				}
			}
		})
	}
	start("etcd", "--data-dir", filepath.Join(dir, "etcd"), "--name", "default",
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL, "--unsafe-no-fsync", "--log-level", "warn")
	start("kube-apiserver", append([]string{"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(apiPort),
		"--tls-cert-file", certFile, "--tls-private-key-file", keyFile,
		"--token-auth-file", tokenFile, "--authorization-mode", "RBAC",
		"--service-account-key-file", saFile, "--service-account-signing-key-file", saFile,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-cluster-ip-range", "10.0.0.0/24", "--endpoint-reconciler-type", "none",
		"--disable-admission-plugins", "ServiceAccount",
		"--max-requests-inflight", "2000", "--max-mutating-requests-inflight", "1000",
		"--enable-priority-and-fairness=false"}, apiserverArgs...)...)

	caPEM, err := os.ReadFile(certFile)
	require.NoError(t, err)
	cfg := &rest.Config{
		Host: fmt.Sprintf("https://127.0.0.1:%d", apiPort), BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}, QPS: 500, Burst: 1000,
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 90*time.Second, true,
		func(context.Context) (bool, error) {
			req, _ := http.NewRequest(http.MethodGet, cfg.Host+"/readyz", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := hc.Do(req)
			if err != nil {
				return false, nil
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
	require.NoError(t, err, "kube-apiserver did not get ready")
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	c := &cluster{cfg: cfg, client: client, dir: dir, bin: bin}
	ctx := context.Background()
	for _, ns := range []string{"team", "fleet-system", "kube-system"} {
		_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) { // the API server makes kube-system itself
			require.NoError(t, err)
		}
	}
	for _, pc := range []struct {
		name  string
		value int32
	}{{"prod-inference", 1000}, {"reserved-research", 500}, {"preemptible-batch", 100}} {
		_, err := client.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: pc.name}, Value: pc.value}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	return c
}

// testClock is the test's clock: the wall clock plus jumps the test makes.
type testClock = host.ShiftedClock

// addNodes creates the reference fleet's nodes with the GKE preset's
// labels: blocks of 8 subblocks of 8 hosts, one node each, 8 GPUs.
func (c *cluster) addNodes(t testing.TB, n int) []string {
	t.Helper()
	ctx := context.Background()
	var names []string
	for i := range n {
		name := fmt.Sprintf("gpu-%03d", i)
		names = append(names, name)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				"cloud.google.com/gce-topology-block":    fmt.Sprintf("b-%d", i/64),
				"cloud.google.com/gce-topology-subblock": fmt.Sprintf("sb-%d", i/8),
				"cloud.google.com/gce-topology-host":     fmt.Sprintf("h-%03d", i),
				"kubernetes.io/hostname":                 name,
				"cloud.google.com/gke-accelerator":       "nvidia-h100-80gb",
			}},
		}
		created, err := c.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		require.NoError(t, err)
		gpus := resource.MustParse("8")
		created.Status = corev1.NodeStatus{
			Capacity:    corev1.ResourceList{podGPUs: gpus, corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{podGPUs: gpus, corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
		}
		created, err = c.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		require.NoError(t, err)
		// The API server taints a new node not-ready (TaintNodesByCondition);
		// the node lifecycle controller, which the suite does not run, lifts
		// the taint once the node is Ready. kube-scheduler honours it.
		created.Spec.Taints = nil
		_, err = c.client.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	return names
}

// setReady flips a node's Ready condition, as the node lifecycle
// controller does when a kubelet stops reporting.
func (c *cluster) setReady(t testing.TB, name string, ready bool) {
	t.Helper()
	ctx := context.Background()
	n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionUnknown
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, Reason: "NodeStatusUnknown"}}
	_, err = c.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// podSpec is one pod the tests create.
type podSpec struct {
	name, queue, class, group string
	total, gpus               int
	annotations               map[string]string
}

func (c *cluster) createPod(t testing.TB, p podSpec) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: "team", Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			SchedulerName:     "fleet",
			PriorityClassName: p.class,
			Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/trainer",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{podGPUs: *resource.NewQuantity(int64(p.gpus), resource.DecimalSI)}}}},
		},
	}
	if p.queue != "" {
		pod.Labels[LabelQueue] = p.queue
	}
	if p.group != "" {
		pod.Labels[LabelPodGroup] = p.group
		pod.Annotations[AnnotationGroupTotal] = fmt.Sprint(p.total)
	}
	for k, v := range p.annotations {
		pod.Annotations[k] = v
	}
	_, err := c.client.CoreV1().Pods("team").Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
}

// createGang creates the n pods of a pod group.
func (c *cluster) createGang(t testing.TB, group, queue, class string, n, gpus int, ann map[string]string) {
	for i := range n {
		c.createPod(t, podSpec{name: fmt.Sprintf("%s-%d", group, i), queue: queue, class: class,
			group: group, total: n, gpus: gpus, annotations: ann})
	}
}

// kubelet plays the kubelets' side of every node: a bound pod runs, a
// deleted pod is gone once its grace period has passed on the test's
// clock (or at once when the test says its workload exited).
type kubelet struct {
	t      testing.TB
	client kubernetes.Interface
	clock  *testClock
	mu     sync.Mutex
	// expiry is when a terminating pod's grace ends, on the test clock.
	expiry map[string]time.Time
	pods   cache.Indexer
}

func startKubelet(t testing.TB, ctx context.Context, cl *cluster, clock *testClock) *kubelet {
	k := &kubelet{t: t, client: cl.client, clock: clock, expiry: map[string]time.Time{}}
	f := informers.NewSharedInformerFactory(cl.client, 0)
	inf := f.Core().V1().Pods().Informer()
	k.pods = inf.GetIndexer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { k.seen(ctx, o.(*corev1.Pod)) },
		UpdateFunc: func(_, o any) { k.seen(ctx, o.(*corev1.Pod)) },
	})
	require.NoError(t, err)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				k.reap(ctx)
			}
		}
	}()
	return k
}

func (k *kubelet) seen(ctx context.Context, p *corev1.Pod) {
	key := p.Namespace + "/" + p.Name
	if p.DeletionTimestamp != nil {
		k.mu.Lock()
		if _, ok := k.expiry[key]; !ok {
			k.expiry[key] = k.clock.Now().Add(time.Until(p.DeletionTimestamp.Time))
		}
		k.mu.Unlock()
		return
	}
	if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodPending {
		cp := p.DeepCopy()
		now := metav1.Now()
		cp.Status.Phase = corev1.PodRunning
		cp.Status.StartTime = &now
		cp.Status.Conditions = append(cp.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
		_, _ = k.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	}
}

// reap removes the pods whose grace has passed.
func (k *kubelet) reap(ctx context.Context) {
	now := k.clock.Now()
	var due []string
	k.mu.Lock()
	for key, at := range k.expiry {
		if !now.Before(at) {
			due = append(due, key)
			delete(k.expiry, key)
		}
	}
	k.mu.Unlock()
	for _, key := range due {
		k.remove(ctx, key)
	}
}

func (k *kubelet) remove(ctx context.Context, key string) {
	ns, name, _ := strings.Cut(key, "/")
	zero := int64(0)
	_ = k.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}

// exitNow ends the terminating pods of a group at once: the workload
// checkpointed and exited before its deadline.
func (k *kubelet) exitNow(ctx context.Context, group string) {
	k.mu.Lock()
	var keys []string
	for key := range k.expiry {
		if strings.HasPrefix(key, "team/"+group+"-") {
			keys = append(keys, key)
			delete(k.expiry, key)
		}
	}
	k.mu.Unlock()
	for _, key := range keys {
		k.remove(ctx, key)
	}
}

// scheduler is one fleet-scheduler replica inside the test.
type scheduler struct {
	c      *Controller
	cancel context.CancelFunc
	done   chan error
	// reg holds the replica's /metrics.
	reg *prometheus.Registry
}

func testConfig(identity string) Config {
	cfg := DefaultConfig()
	cfg.Namespace = "fleet-system"
	cfg.Identity = identity
	cfg.QuotaFile = "testdata/quota.yaml"
	cfg.Listen = ""
	d := func(x time.Duration) metav1.Duration { return metav1.Duration{Duration: x} }
	cfg.Period = d(time.Second)
	cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod = d(3*time.Second), d(2*time.Second), d(500*time.Millisecond)
	cfg.Classes = []ClassConfig{
		{Name: "prod-inference", Value: 1000},
		{Name: "reserved-research", Value: 500, Grace: d(120 * time.Second), MinRuntime: d(5 * time.Minute)},
		{Name: "preemptible-batch", Value: 100, Grace: d(120 * time.Second), MinRuntime: d(time.Minute)},
	}
	cfg.Shapes = map[string]string{"prod-inference": "inference", "reserved-research": "training", "preemptible-batch": "batch"}
	return cfg
}

// startScheduler runs a replica under leader election.
func startScheduler(t testing.TB, cl *cluster, clock *testClock, identity string, observe func(fleet.Decisions)) *scheduler {
	t.Helper()
	cfg := testConfig(identity)
	require.NoError(t, cfg.Validate())
	data, err := os.ReadFile(cfg.QuotaFile)
	require.NoError(t, err)
	q, err := kueue.Parse(data, kueue.Options{})
	require.NoError(t, err)
	client, status, err := NewClients(cl.cfg, cfg)
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("replica", identity)
	reg := prometheus.NewRegistry()
	exp, err := prom.New(reg)
	require.NoError(t, err)
	c, err := New(cfg, Options{Client: client, StatusClient: status, Quota: q, Clock: clock, Logger: log, Metrics: exp})
	require.NoError(t, err)
	c.observe = observe
	ctx, cancel := context.WithCancel(context.Background())
	s := &scheduler{c: c, cancel: cancel, done: make(chan error, 1), reg: reg}
	require.NoError(t, c.StartInformers(ctx))
	go func() { s.done <- c.Elect(ctx) }()
	t.Cleanup(s.stop)
	return s
}

// stop kills the replica: no cleanup, the Lease is left to expire.
func (s *scheduler) stop() {
	s.cancel()
	<-s.done
	s.done <- nil
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// eventually polls cond every 100 ms for up to d.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.FailNow(t, "timed out waiting: "+what)
}

// listPods lists the test namespace's pods.
func (c *cluster) listPods(t testing.TB) []corev1.Pod {
	t.Helper()
	l, err := c.client.CoreV1().Pods("team").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return l.Items
}
