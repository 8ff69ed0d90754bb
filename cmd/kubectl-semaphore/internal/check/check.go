// Package check checks that the Semaphore controllers of a cluster work: their pods are ready,
// and for every remote they read, with the very credentials their pods mount, the remote answers,
// grants exactly what the components need, and what they made locally matches it (mirrors,
// network sets, WireGuard peers). Each failure says what is wrong and links a runbook.
package check

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
)

// runbookBase is where the runbooks of the checks' failures live; each check appends its anchor.
const runbookBase = "https://github.com/kube-semaphore/semaphore/blob/main/docs/runbooks.md#"

// Check names, the first column of the output and the "check" field of JSON.
const (
	componentsFound = "components"
	Pods            = "pods"
	Reachable       = "reachable"
	Identity        = "identity"
	Access          = "access"
	Mirrors         = "mirrors"
	Global          = "global-services"
	NetworkSets     = "network-sets"
	Peers           = "peers"
	Handshakes      = "handshakes"
	PodRanges       = "pod-ranges"
)

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
	// Runbook is set on failures: what to do.
	Runbook string `json:"runbook,omitempty"`
}

// Options tune a check.
type Options struct {
	// Namespace narrows the components checked ("" for every namespace).
	Namespace string
	// Timeout bounds each request to a remote (default 10s).
	Timeout time.Duration
	// MaxHandshakeAge is how old a peer's last WireGuard handshake may be (default 3m: with the
	// default keepalive a working tunnel handshakes about every 2 minutes).
	MaxHandshakeAge time.Duration
	// Now is the current time (default time.Now).
	Now func() time.Time
	// Skip are checks not to run (their names, e.g. peers and handshakes where the API server
	// cannot reach the pods).
	Skip []string
	// Metrics returns the /metrics text of a wireguard pod; by default it is read through
	// the API server's pod proxy on the pod's admin port.
	Metrics func(ctx context.Context, pod *corev1.Pod) ([]byte, error)
	// AllowExecPlugins lets the kubeconfigs of the remotes, read from the cluster's Secrets, run
	// exec credential plugins and auth-providers on this machine (release.CredentialOptions).
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
		o.Metrics = func(ctx context.Context, pod *corev1.Pod) ([]byte, error) {
			return agents.PodProxy{Client: client}.Metrics(ctx, pod, agents.AdminPort(pod))
		}
	}
}

// Run checks the Semaphore components of the cluster of client (dyn reads its
// GlobalNetworkSets) and returns one result per check.
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
	allowed := allowedByRemote(all)

	out := []Result{}
	creds := release.CredentialOptions{AllowExecPlugins: opts.AllowExecPlugins}
	for _, c := range components {
		out = append(out, checkWorkload(ctx, client, c)...)
		out = append(out, checkPodRanges(c)...)
		for _, name := range c.RemoteNames() {
			r, err := c.Remote(ctx, client, name, creds)
			if err != nil {
				msg := err.Error()
				if !errors.As(err, new(*release.RunsHereError)) {
					msg += ": fix the remotes values of the semaphore release"
				}
				out = append(out, Result{Check: Reachable, Cluster: c.LocalCluster(), Remote: name, Component: c.Name, Message: msg, Runbook: runbookBase + "check-reachable"})
				continue
			}
			out = append(out, checkRemote(ctx, client, dyn, c, r, allowed[r.Name], opts)...)
		}
	}
	return slices.DeleteFunc(out, func(r Result) bool { return opts.skips(r.Check) }), nil
}

func (o Options) skips(check string) bool { return slices.Contains(o.Skip, check) }

// checkRemote runs the checks of one component against one remote, with the credentials its
// pods mount.
func checkRemote(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, c release.Component, r release.Remote, allowed []probe, opts Options) []Result {
	res := func(check string) Result {
		return Result{Check: check, Cluster: c.LocalCluster(), Remote: r.Name, Component: c.Name}
	}
	cfg := *r.Config
	cfg.Timeout = opts.Timeout
	// Dozens of access reviews: client-go's default 5 requests/s would make them take long.
	cfg.QPS, cfg.Burst = 50, 100
	remote, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return []Result{fail(res(Reachable), "check-reachable", "remote %s: the credentials of Secrets %v give no client: %v", r.Name, r.Secrets, err)}
	}
	reach, ok := checkReachable(ctx, remote, r, res)
	out := []Result{reach}
	if !ok {
		return out
	}
	who, ok := checkIdentity(ctx, remote, r, res)
	out = append(out, who)
	if !ok {
		return out
	}
	out = append(out, checkAccess(ctx, remote, c, r, allowed, res(Access)))
	switch c.Name {
	case release.ServiceMirror:
		out = append(out, checkMirrors(ctx, client, remote, c, r.Name, res(Mirrors)))
		// An empty SEMAPHORE_GLOBAL_LABEL_SELECTOR turns global services off.
		if env(c, "SEMAPHORE_GLOBAL_LABEL_SELECTOR", global.DefaultSelector) != "" {
			out = append(out, checkGlobalServices(ctx, client, remote, c, r.Name, res(Global)))
		}
	case release.Policy:
		out = append(out, checkNetworkSets(ctx, dyn, remote, c, r.Name, res(NetworkSets)))
	case release.WireGuard:
		if !opts.skips(Peers) || !opts.skips(Handshakes) {
			out = append(out, checkWireGuard(ctx, client, remote, c, r.Name, opts, res)...)
		}
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

// PrintJSON writes the results as a JSON list.
func PrintJSON(w io.Writer, results []Result) error {
	if results == nil {
		results = []Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}
