package kube

import (
	"errors"
	"flag"
	"fmt"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Config is the scheduler's configuration: flags, or a YAML file of the
// same names (flags given on the command line win over the file).
type Config struct {
	// SchedulerName is the spec.schedulerName of the pods fleet schedules.
	SchedulerName string `json:"schedulerName"`
	// Namespace holds the Lease and the state ConfigMap.
	Namespace string `json:"namespace"`
	// Identity names this replica in the Lease (the pod name).
	Identity string `json:"identity"`
	// Preset reads node topology labels: gke, aws, topograph.
	Preset string `json:"preset"`
	// QuotaFile is a Kueue YAML file (ClusterQueue, Cohort,
	// ResourceFlavor, LocalQueue); QuotaConfigMap, "namespace/name", a
	// ConfigMap holding such a file under the key quota.yaml. Either is
	// read again when it changes (the ConfigMap is watched, the file read
	// every Period): an edit becomes live quota edits (SetQueue), or is
	// refused whole with a QuotaRefused Event (see the package doc).
	QuotaFile      string `json:"quotaFile,omitempty"`
	QuotaConfigMap string `json:"quotaConfigMap,omitempty"`
	// PriorityClasses maps a pod's priorityClassName to a fleet priority
	// class; a name not listed is used as it is.
	PriorityClasses map[string]string `json:"priorityClasses,omitempty"`
	// Classes are fleet's priority classes with their drain contract.
	Classes []ClassConfig `json:"classes,omitempty"`
	// Shapes gives the default shape (inference, training, batch) of the
	// pods of a fleet priority class.
	Shapes map[string]string `json:"shapes,omitempty"`
	// Listen is the address of /metrics, /healthz and /readyz.
	Listen string `json:"listen"`
	// QPS and Burst bound the client's requests to the API server:
	// bindings, deletions, nominations, the Lease and the state.
	QPS   float32 `json:"qps"`
	Burst int     `json:"burst"`
	// StatusQPS and StatusBurst bound the status client's, which writes
	// the PodScheduled=False conditions of pods that wait or are refused
	// and every Event (as kube-scheduler gives Events a client of their
	// own): a flood of bad pods spends its budget, not the bindings'. The
	// API server sees at most QPS plus StatusQPS from a replica.
	StatusQPS   float32 `json:"statusQPS"`
	StatusBurst int     `json:"statusBurst"`
	// Binders is how many API writes (bindings, deletions, status) run at
	// once.
	Binders int `json:"binders"`
	// Period is the longest time between two scheduling cycles.
	Period metav1.Duration `json:"period"`
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election.
	LeaseDuration metav1.Duration `json:"leaseDuration"`
	RenewDeadline metav1.Duration `json:"renewDeadline"`
	RetryPeriod   metav1.Duration `json:"retryPeriod"`
}

// ClassConfig is one fleet priority class.
type ClassConfig struct {
	// Name is the class's name, as the priority mapping names it.
	Name string `json:"name"`
	// Value is its priority: higher wins.
	Value int32 `json:"value"`
	// Grace is the drain deadline of its victims (zero: fleet's 120 s).
	Grace metav1.Duration `json:"grace,omitzero"`
	// MinRuntime is how long its work runs before it may be preempted.
	MinRuntime metav1.Duration `json:"minRuntime,omitzero"`
}

// DefaultConfig is the configuration flags start from.
func DefaultConfig() Config {
	return Config{
		SchedulerName: "fleet",
		Namespace:     "fleet-system",
		Preset:        "gke",
		Listen:        ":8080",
		QPS:           200,
		Burst:         400,
		StatusQPS:     100,
		StatusBurst:   200,
		Binders:       16,
		Period:        metav1.Duration{Duration: 5 * time.Second},
		LeaseDuration: metav1.Duration{Duration: 15 * time.Second},
		RenewDeadline: metav1.Duration{Duration: 10 * time.Second},
		RetryPeriod:   metav1.Duration{Duration: 2 * time.Second},
	}
}

// NewClients makes the controller's two clientsets from rc: the main one
// with cfg's QPS and Burst, the status one with its StatusQPS and
// StatusBurst (Options.Client and Options.StatusClient).
func NewClients(rc *rest.Config, cfg Config) (client, status kubernetes.Interface, err error) {
	main, st := rest.CopyConfig(rc), rest.CopyConfig(rc)
	main.QPS, main.Burst = cfg.QPS, cfg.Burst
	st.QPS, st.Burst = cfg.StatusQPS, cfg.StatusBurst
	if client, err = kubernetes.NewForConfig(main); err != nil {
		return nil, nil, err
	}
	if status, err = kubernetes.NewForConfig(st); err != nil {
		return nil, nil, err
	}
	return client, status, nil
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("kube: bad configuration")

// ParseFlags reads a configuration: DefaultConfig, then the file named
// by -config, then the other flags given.
func ParseFlags(fs *flag.FlagSet, args []string) (Config, error) {
	cfg := DefaultConfig()
	file := fs.String("config", "", "YAML configuration file (fields as the flags)")
	var fromFlags Config
	fs.StringVar(&fromFlags.SchedulerName, "scheduler-name", "", "spec.schedulerName of the pods to schedule (fleet)")
	fs.StringVar(&fromFlags.Namespace, "namespace", "", "namespace of the Lease and state ConfigMap (fleet-system)")
	fs.StringVar(&fromFlags.Identity, "identity", "", "this replica's name in the Lease (default: host name)")
	fs.StringVar(&fromFlags.Preset, "preset", "", "node topology labels: gke, aws or topograph (gke)")
	fs.StringVar(&fromFlags.QuotaFile, "quota-file", "", "Kueue YAML of ClusterQueues, Cohorts, flavors, LocalQueues")
	fs.StringVar(&fromFlags.QuotaConfigMap, "quota-configmap", "", "namespace/name of a ConfigMap holding quota.yaml")
	fs.StringVar(&fromFlags.Listen, "listen", "", "address of /metrics, /healthz and /readyz (:8080)")
	qps := fs.Float64("qps", 0, "client requests per second to the API server (200)")
	fs.IntVar(&fromFlags.Burst, "burst", 0, "client burst (400)")
	statusQPS := fs.Float64("status-qps", 0, "requests per second for conditions and Events (100)")
	fs.IntVar(&fromFlags.StatusBurst, "status-burst", 0, "burst for conditions and Events (200)")
	fs.IntVar(&fromFlags.Binders, "binders", 0, "API writes in flight at once (16)")
	fs.DurationVar(&fromFlags.Period.Duration, "period", 0, "longest time between two cycles (5s)")
	if err := fs.Parse(args); err != nil {
		return cfg, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	fromFlags.QPS, fromFlags.StatusQPS = float32(*qps), float32(*statusQPS)
	if *file != "" {
		data, err := os.ReadFile(*file)
		if err != nil {
			return cfg, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
			return cfg, fmt.Errorf("%w: %s: %v", ErrConfig, *file, err)
		}
	}
	over := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	over(&cfg.SchedulerName, fromFlags.SchedulerName)
	over(&cfg.Namespace, fromFlags.Namespace)
	over(&cfg.Identity, fromFlags.Identity)
	over(&cfg.Preset, fromFlags.Preset)
	over(&cfg.QuotaFile, fromFlags.QuotaFile)
	over(&cfg.QuotaConfigMap, fromFlags.QuotaConfigMap)
	over(&cfg.Listen, fromFlags.Listen)
	if fromFlags.QPS > 0 {
		cfg.QPS = fromFlags.QPS
	}
	if fromFlags.Burst > 0 {
		cfg.Burst = fromFlags.Burst
	}
	if fromFlags.StatusQPS > 0 {
		cfg.StatusQPS = fromFlags.StatusQPS
	}
	if fromFlags.StatusBurst > 0 {
		cfg.StatusBurst = fromFlags.StatusBurst
	}
	if fromFlags.Binders > 0 {
		cfg.Binders = fromFlags.Binders
	}
	if fromFlags.Period.Duration > 0 {
		cfg.Period = fromFlags.Period
	}
	if cfg.Identity == "" {
		cfg.Identity, _ = os.Hostname()
	}
	return cfg, cfg.Validate()
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	switch {
	case c.SchedulerName == "":
		return fmt.Errorf("%w: schedulerName is empty", ErrConfig)
	case c.Namespace == "":
		return fmt.Errorf("%w: namespace is empty", ErrConfig)
	case c.QuotaFile == "" && c.QuotaConfigMap == "":
		return fmt.Errorf("%w: give quotaFile or quotaConfigMap (Kueue YAML of the queues)", ErrConfig)
	case c.QuotaFile != "" && c.QuotaConfigMap != "":
		return fmt.Errorf("%w: give quotaFile or quotaConfigMap, not both", ErrConfig)
	case c.QPS <= 0 || c.Burst < 1:
		return fmt.Errorf("%w: qps %g and burst %d, want more than 0 and at least 1", ErrConfig, c.QPS, c.Burst)
	case c.StatusQPS <= 0 || c.StatusBurst < 1:
		return fmt.Errorf("%w: statusQPS %g and statusBurst %d, want more than 0 and at least 1", ErrConfig, c.StatusQPS, c.StatusBurst)
	case c.Binders < 1:
		return fmt.Errorf("%w: binders %d, want at least 1", ErrConfig, c.Binders)
	case c.Period.Duration <= 0:
		return fmt.Errorf("%w: period %s, want more than 0", ErrConfig, c.Period)
	}
	return nil
}
