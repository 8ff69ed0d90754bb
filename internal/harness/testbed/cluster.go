// Package testbed runs what Semaphore's integration tests and its local lab are made of, and
// returns errors rather than failing a test: real Kubernetes API servers (kube-apiserver + etcd,
// through envtest), each a "cluster" behind a proxy that can be cut; CoreDNS; Linux network and
// mount namespaces and helpers to dial, forward, ping and resolve inside them; Prometheus
// scraping; WireGuard's UAPI; what /proc tells of processes; building Go binaries. It does not
// import testing, so the lab binary does not link it; package testenv wraps it for tests.
//
// The API server binaries are built from the Go module proxy by ci/kube-binaries.sh and cached
// on disk; KUBEBUILDER_ASSETS overrides where they are looked for.
//
// Every cluster is reachable two ways: Config talks to the API server directly (for the test or
// the lab itself), while the kubeconfig file at Kubeconfig goes through a TCP proxy that can be
// cut (SetReachable), which is how a remote "goes away" without losing its state.
package testbed

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Options tune the API servers.
type Options struct {
	// Audit logs every write request at Metadata level, so tests can count writes.
	Audit bool
	// CRDDirs hold CustomResourceDefinitions (YAML) to install.
	CRDDirs []string
	// ServiceCIDRs is the --service-cluster-ip-range (default 10.0.0.0/16: room for thousands
	// of Services, which benchmarks need).
	ServiceCIDRs string
	// Dir is where kubeconfigs and logs go (default: a new temporary directory).
	Dir string
	// CertDir, when set, holds the API server's serving certificate and key (apiserver.crt,
	// apiserver.key, signed by ServingCA) and its service-account signing pair
	// (sa-signer.crt, sa-signer.key), for a cluster whose pods reach the API server at
	// addresses envtest's own certificate does not name (its Service's ClusterIP). envtest then
	// uses them instead of making its own.
	CertDir   string
	ServingCA []byte
	// APIServerFlags are kube-apiserver flags set on top of envtest's (name without dashes).
	APIServerFlags map[string]string
}

// Cluster is one running API server.
type Cluster struct {
	Name string
	// Config is an admin client configuration that talks to the API server directly.
	Config *rest.Config
	// Client is a clientset for Config.
	Client kubernetes.Interface
	// Kubeconfig is the path of an admin kubeconfig that goes through the cuttable proxy.
	Kubeconfig string
	// DirectKubeconfig is the path of an admin kubeconfig that talks to the API server directly.
	DirectKubeconfig string
	// AuditLog is the path of the audit log when Options.Audit is set.
	AuditLog string

	env   *envtest.Environment
	proxy *proxy
	// tempDir is the directory StartCluster made for the kubeconfigs and logs, removed by Stop.
	tempDir string
}

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// StartCluster starts one API server. Stop it with Stop.
func StartCluster(name string, opts Options) (*Cluster, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	dir, tempDir := opts.Dir, ""
	if dir == "" {
		if dir, err = os.MkdirTemp("", "semaphore-"+name+"-"); err != nil {
			return nil, err
		}
		tempDir = dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        opts.CRDDirs,
		ErrorIfCRDPathMissing:    len(opts.CRDDirs) > 0,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	// etcd starts from an empty data directory every time (the lab's clusters too), so nothing
	// it holds outlives a crash anyway and it need not sync each write to disk; on a shared
	// virtual disk that latency made the benchmarks' write times vary by half between runs.
	env.ControlPlane.Etcd = &envtest.Etcd{}
	env.ControlPlane.Etcd.Configure().Set("unsafe-no-fsync", "true")
	c := &Cluster{Name: name, env: env, tempDir: tempDir}
	if c.AuditLog, err = configureAPIServer(env, opts, dir); err != nil {
		return nil, err
	}
	_, err = env.Start()
	guardChildren() // even after an error: a half-started control plane has processes too
	if err != nil {
		_ = os.RemoveAll(tempDir)
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	if err := c.connect(dir); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// configureAPIServer sets envtest's kube-apiserver flags from opts and returns the path of the
// audit log ("" without Options.Audit), whose policy it writes to dir.
func configureAPIServer(env *envtest.Environment, opts Options, dir string) (auditLog string, err error) {
	apiServer := env.ControlPlane.GetAPIServer()
	if opts.CertDir != "" {
		apiServer.CertDir = opts.CertDir
		apiServer.SecureServing.CA = opts.ServingCA
	}
	args := apiServer.Configure()
	if opts.ServiceCIDRs == "" {
		opts.ServiceCIDRs = "10.0.0.0/16"
	}
	args.Set("service-cluster-ip-range", opts.ServiceCIDRs)
	// Otherwise kube-apiserver derives the address from the default route, and fails to start
	// where there is none (inside a network namespace a test created).
	args.Set("advertise-address", "127.0.0.1")
	for flag, value := range opts.APIServerFlags {
		args.Set(flag, value)
	}
	if !opts.Audit {
		return "", nil
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return "", err
	}
	auditLog = filepath.Join(dir, "audit.log")
	args.Set("audit-policy-file", policy)
	args.Set("audit-log-path", auditLog)
	args.Set("audit-log-mode", "blocking")
	return auditLog, nil
}

// connect gives the started c its admin client, its proxy, and its two kubeconfigs in dir.
func (c *Cluster) connect(dir string) error {
	// envtest's own config is a cluster admin; a separate user keeps the kubeconfig we hand
	// out independent of it.
	admin, err := c.env.AddUser(envtest.User{Name: "semaphore-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	c.Config = admin.Config()
	c.Client = kubernetes.NewForConfigOrDie(c.Config)
	if c.proxy, err = newProxy(c.Config.Host); err != nil {
		return err
	}
	c.DirectKubeconfig = filepath.Join(dir, "kubeconfig-direct")
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	if err := writeKubeconfig(c.DirectKubeconfig, kubeconfig, c.Name, ""); err != nil {
		return err
	}
	return writeKubeconfig(c.Kubeconfig, kubeconfig, c.Name, "https://"+c.proxy.Addr())
}

func writeKubeconfig(path string, data []byte, name, server string) error {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return err
	}
	for _, cl := range kc.Clusters {
		if server != "" {
			cl.Server = server
		}
	}
	// Name the context after the cluster so several kubeconfigs can be merged.
	for k, ctx := range kc.Contexts {
		delete(kc.Contexts, k)
		kc.Contexts[name] = ctx
	}
	kc.CurrentContext = name
	return clientcmd.WriteToFile(*kc, path)
}

// AddUser writes to path a kubeconfig for a user of the API server, authenticated by a client
// certificate, named user and member of groups: how the lab gives kubelets, kube-proxy and the
// control plane their own identities. server replaces the API server's URL in it when set
// (for clients that reach the API server at another address).
func (c *Cluster) AddUser(path, user string, groups []string, server string) error {
	u, err := c.env.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err := u.KubeConfig()
	if err != nil {
		return err
	}
	return writeKubeconfig(path, kubeconfig, c.Name, server)
}

// Stop stops the API server and its proxy.
func (c *Cluster) Stop() {
	if c.proxy != nil {
		c.proxy.Close()
	}
	_ = c.env.Stop()
	guardChildren() // forgets the stopped processes
	if c.tempDir != "" {
		_ = os.RemoveAll(c.tempDir)
	}
}

// SetReachable cuts (false) or restores (true) the proxy that Kubeconfig goes through: while
// cut, connections are refused and open ones are closed, as if the API server had gone away.
func (c *Cluster) SetReachable(up bool) error {
	return c.proxy.SetUp(up)
}

// SetLatency delays every chunk going through the proxy that Kubeconfig goes through, both
// ways and on open connections too, by d, as if the API server were far away or congested; 0
// removes the delay.
func (c *Cluster) SetLatency(d time.Duration) { c.proxy.SetLatency(d) }

// AuditEvent is the part of an audit log entry tests look at.
type AuditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// AuditEvents are audit log entries, printable one per line.
type AuditEvents []AuditEvent

func (events AuditEvents) String() string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "\n  %s %s %s/%s %d", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name, e.ResponseStatus.Code)
	}
	return b.String()
}

// Writes returns the write requests recorded in the audit log whose user agent starts with
// userAgent (all when empty). Options.Audit must have been set.
func (c *Cluster) Writes(userAgent string) (AuditEvents, error) {
	if c.AuditLog == "" {
		return nil, errors.New("audit log not enabled")
	}
	f, err := os.Open(c.AuditLog)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var events AuditEvents
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log %s: %w", c.AuditLog, err)
		}
		if userAgent == "" || strings.HasPrefix(e.UserAgent, userAgent) {
			events = append(events, e)
		}
	}
	return events, sc.Err()
}

// EnsureNamespace creates namespace ns (with its default ServiceAccount, which no controller
// manager creates here) unless it exists.
func (c *Cluster) EnsureNamespace(ctx context.Context, ns string) error {
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err = c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// LeaseHolder is the holder of the Lease namespace/name in c ("" when released or absent).
func (c *Cluster) LeaseHolder(namespace, name string) (string, error) {
	l, err := c.Client.CoordinationV1().Leases(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return ptr.Deref(l.Spec.HolderIdentity, ""), nil
}

// WriteRemoteKubeconfig copies the kubeconfig file at kubeconfig to where a controller reads
// the remote called name from its remotes directory dir: dir/<name>/kubeconfig, as
// remote.KubeconfigPath says (not imported: package remote's own tests use this package).
func WriteRemoteKubeconfig(dir, name, kubeconfig string) error {
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, name, "kubeconfig")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
