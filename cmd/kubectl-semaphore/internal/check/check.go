// Package check checks that the Semaphore controllers of a cluster work, from where they run:
// their pods are ready, and for every remote they read, their own metrics (read through the API
// server's pod proxy) say that the remote answers them, who they are there, that it forbids them
// nothing, and, for WireGuard, that every peer handshakes over a path its MTU fits. Where the
// service mirror serves the Multi-Cluster Services API, the cluster must serve it too and the
// local ServiceExports be valid, ready and in no conflict. Preflight checks read the local
// cluster: the CoreDNS rewrite of each remote, Calico's IP pools for the remotes' pod ranges,
// and that no pod ranges overlap. Nothing here connects to an address read from a cluster's
// objects unless asked to (Options.ProbeRemotes): then the remotes are also asked, from this
// machine and with the pods' credentials, what they answer, grant and hold. Each failure says
// what is wrong and links a runbook.
package check

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/agents"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// runbookBase is where the runbooks of the checks' failures live; each check appends its anchor.
const runbookBase = "https://github.com/kube-semaphore/semaphore/blob/main/docs/runbooks.md#"

// Check names, the first column of the output and the "check" field of JSON.
const (
	componentsFound = "components"
	Pods            = "pods"
	PodRanges       = "pod-ranges"
	// Reachable, Identity and Access are what the components' pods say of each remote.
	Reachable = "reachable"
	Identity  = "identity"
	Access    = "access"
	// Peers, Handshakes, WireGuardMode and MTU are what the wireguard agents say.
	Peers         = "peers"
	Handshakes    = "handshakes"
	WireGuardMode = "wireguard-mode"
	MTU           = "mtu"
	// DNS and IPPools are preflight checks of the local cluster's configuration.
	DNS     = "dns"
	IPPools = "ippools"
	// MCSAPI, MCSExports and MCSConflicts check the Multi-Cluster Services API the service
	// mirror serves (SEMAPHORE_MCS_ENABLED): that the cluster and the service mirror serve it,
	// that every local ServiceExport is valid and ready, and that none is in conflict.
	MCSAPI       = "mcs-api"
	MCSExports   = "mcs-exports"
	MCSConflicts = "mcs-conflicts"
	// The checks that connect to the remotes from this machine (Options.ProbeRemotes).
	ProbeReachable = "probe-reachable"
	ProbeIdentity  = "probe-identity"
	ProbeAccess    = "probe-access"
	Mirrors        = "mirrors"
	Global         = "global-services"
	NetworkSets    = "network-sets"
)

// Names are the names of every check: what Options.Skip takes.
var Names = []string{
	componentsFound, Pods, PodRanges, Reachable, Identity, Access, Peers, Handshakes, WireGuardMode, MTU,
	MCSAPI, MCSExports, MCSConflicts, DNS, IPPools,
	ProbeReachable, ProbeIdentity, ProbeAccess, Mirrors, Global, NetworkSets,
}

// Unknown are those of names that name no check, in their order.
func Unknown(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(Names, n) {
			out = append(out, n)
		}
	}
	return out
}

// Result is the outcome of one check.
type Result struct {
	Check string `json:"check"`
	// Cluster is the local cluster's name as the components know it (SEMAPHORE_LOCAL_CLUSTER).
	Cluster   string `json:"cluster"`
	Remote    string `json:"remote,omitempty"`
	Component string `json:"component,omitempty"`
	OK        bool   `json:"ok"`
	// Warning marks a result that passes but says what is weaker than it should be.
	Warning bool   `json:"warning,omitempty"`
	Message string `json:"message"`
	// Runbook is set on failures, and on warnings that ask for something to be done: what to do.
	Runbook string `json:"runbook,omitempty"`
}

// Options tune a check.
type Options struct {
	// Namespace narrows the components checked ("" for every namespace).
	Namespace string
	// Timeout bounds each read of a pod's metrics and each request to a remote (default 10s).
	Timeout time.Duration
	// MaxHandshakeAge is how old a peer's last WireGuard handshake may be (default 3m: with the
	// default keepalive a working tunnel handshakes about every 2 minutes).
	MaxHandshakeAge time.Duration
	// Now is the current time (default time.Now).
	Now func() time.Time
	// Skip are checks not to run (their names, e.g. reachable and peers where the API server
	// cannot reach the pods).
	Skip []string
	// Metrics returns the /metrics text a pod serves on port; by default it is read through the
	// API server's pod proxy.
	Metrics func(ctx context.Context, pod *corev1.Pod, port int) ([]byte, error)
	// ProbeRemotes connects, from this machine, to each remote's API server at the address of
	// its kubeconfig in the cluster's Secrets, with the credentials the pods mount: it checks
	// what the remote answers, who the credentials are, what they may do (access reviews), and
	// compares the mirrors, global services, network sets and peers with the remote's objects.
	// Off, nothing connects to an address read from a cluster's objects.
	ProbeRemotes bool
	// AllowExecPlugins lets the kubeconfigs of the remotes, read from the cluster's Secrets, run
	// exec credential plugins and auth-providers on this machine (release.CredentialOptions);
	// they only run with ProbeRemotes.
	AllowExecPlugins bool
}

func (o *Options) defaults(client kubernetes.Interface) {
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxHandshakeAge == 0 {
		o.MaxHandshakeAge = agents.MaxHandshakeAge
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Metrics == nil {
		o.Metrics = agents.PodProxy{Client: client}.Metrics
	}
}

// Run checks the Semaphore components of the cluster of client (dyn reads its Calico
// resources) and returns one result per check.
func Run(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, opts Options) ([]Result, error) {
	opts.defaults(client)
	components, err := release.Find(ctx, client, opts.Namespace)
	if err != nil {
		return nil, err
	}
	if len(components) == 0 {
		return []Result{{Check: componentsFound, OK: false, Runbook: runbookBase + "check-components",
			Message: fmt.Sprintf("no Semaphore components (workloads labelled %s) in %s: install the semaphore chart, or pass its namespace with -n", release.PartOf, release.Where(opts.Namespace))}}, nil
	}
	// What a remote may grant is the union of what every component of this cluster that
	// reads it needs, so it is computed from all of them even when -n narrows the check.
	all := components
	if opts.Namespace != "" {
		if found, err := release.Find(ctx, client, ""); err == nil {
			all = found
		}
	}
	k := &checker{client: client, dyn: dyn, opts: opts}
	allowed := allowedByRemote(all)
	out := []Result{}
	for _, c := range components {
		out = append(out, k.component(ctx, c, allowed)...)
	}
	out = append(out, k.preflight(ctx, components)...)
	return slices.DeleteFunc(out, func(r Result) bool { return opts.skips(r.Check) }), nil
}

func (o Options) skips(check string) bool { return slices.Contains(o.Skip, check) }

// checker is one run of the checks: the local cluster's clients, the options, and the local
// Nodes once listed.
type checker struct {
	client   kubernetes.Interface
	dyn      dynamic.Interface
	opts     Options
	nodes    []corev1.Node
	nodesErr error
}

// component runs the checks of one component: its workload, its pod ranges and, for each remote
// it reads, what its pods say of it (and, with ProbeRemotes, what the remote says); of the
// service mirror, the Multi-Cluster Services API.
func (k *checker) component(ctx context.Context, c release.Component, allowed map[string][]probe) []Result {
	view := k.controllers(ctx, c)
	out := checkWorkload(ctx, k.client, c, view.all, view.err)
	out = append(out, checkPodRanges(c)...)
	for _, name := range c.RemoteNames() {
		var asked probed
		if k.opts.ProbeRemotes {
			asked = k.probeRemote(ctx, c, name, allowed[name])
		}
		out = append(out, k.fromPods(ctx, view, name, asked)...)
		out = append(out, asked.results...)
	}
	if c.Name == release.ServiceMirror {
		out = append(out, k.checkMCS(ctx, view)...)
	}
	return out
}

func fail(r Result, anchor, format string, args ...any) Result {
	r.OK, r.Message, r.Runbook = false, fmt.Sprintf(format, args...), runbookBase+anchor
	return r
}

func pass(r Result, format string, args ...any) Result {
	r.OK, r.Message = true, fmt.Sprintf(format, args...)
	return r
}

// warn is a result that passes, saying what is weaker than it should be.
func warn(r Result, format string, args ...any) Result {
	r = pass(r, format, args...)
	r.Warning = true
	return r
}

// warnRunbook is a warning that links the runbook of what to do about it.
func warnRunbook(r Result, anchor, format string, args ...any) Result {
	r = warn(r, format, args...)
	r.Runbook = runbookBase + anchor
	return r
}

// Failed reports whether any result is a failure.
func Failed(results []Result) bool {
	for _, r := range results {
		if !r.OK {
			return true
		}
	}
	return false
}

// Print writes one line per result: OK, WARN or FAIL, the check, where, and the message; failures
// get a second line with the runbook.
func Print(w io.Writer, results []Result) error {
	for _, r := range results {
		status := "OK  "
		switch {
		case !r.OK:
			status = "FAIL"
		case r.Warning:
			status = "WARN"
		}
		where := r.Cluster
		if r.Remote != "" {
			where += " <- " + r.Remote
		}
		if r.Component != "" {
			where += " " + r.Component
		}
		if _, err := fmt.Fprintf(w, "%s %-15s %s: %s\n", status, r.Check, strings.TrimSpace(where), r.Message); err != nil {
			return err
		}
		if r.Runbook != "" {
			if _, err := fmt.Fprintf(w, "     runbook: %s\n", r.Runbook); err != nil {
				return err
			}
		}
	}
	return nil
}
