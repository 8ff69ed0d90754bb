package check

import (
	"context"
	"errors"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/components/service-mirror/global"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/remote"
)

// probed is what asking a remote from this machine found: the results, and for wireguard the
// names of the remote's Nodes, which every agent must have as peers (nil when not listed;
// nodesErr says why they could not be).
type probed struct {
	results  []Result
	nodes    []string
	nodesErr error
	// throughGateway is true when the remote reaches this cluster through its active gateway
	// (one of its Nodes says so): gateway is that node, "" when none says it with a term.
	throughGateway bool
	gateway        string
}

// probeRemote asks remote name, from this machine and with the credentials the component's pods
// mount, whether it answers, who the credentials are, what they may do, and, for the component,
// what it holds that the component copies here. It is the only part of the check that connects
// to an address read from the cluster's objects (Options.ProbeRemotes).
func (k *checker) probeRemote(ctx context.Context, c release.Component, name string, allowed []probe) probed {
	res := func(check string) Result {
		return Result{Check: check, Cluster: c.LocalCluster(), Remote: name, Component: c.Name}
	}
	r, err := c.Remote(ctx, k.client, name, release.CredentialOptions{AllowExecPlugins: k.opts.AllowExecPlugins})
	if err != nil {
		msg := err.Error()
		if !errors.As(err, new(*release.RunsHereError)) {
			msg += ": fix the remotes values of the semaphore release"
		}
		return probed{results: []Result{fail(res(ProbeReachable), "check-probe-reachable", "%s", msg)}}
	}
	cfg := *r.Config
	cfg.Timeout = k.opts.Timeout
	// Dozens of access reviews: client-go's default 5 requests/s would make them take long.
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return probed{results: []Result{fail(res(ProbeReachable), "check-probe-reachable", "remote %s: the credentials of Secrets %v give no client: %v", r.Name, r.Secrets, err)}}
	}
	reach, ok := probeReachable(ctx, client, r, res)
	out := probed{results: []Result{reach}}
	if !ok {
		return out
	}
	who, ok := probeIdentity(ctx, client, r, res)
	out.results = append(out.results, who)
	if !ok {
		return out
	}
	out.results = append(out.results, probeAccess(ctx, client, c, r, allowed, res(ProbeAccess)))
	switch c.Name {
	case release.ServiceMirror:
		out.results = append(out.results, checkMirrors(ctx, k.client, client, c, r.Name, res(Mirrors)))
		// An empty SEMAPHORE_GLOBAL_LABEL_SELECTOR turns global services off.
		if env(c, "SEMAPHORE_GLOBAL_LABEL_SELECTOR", global.DefaultSelector) != "" {
			out.results = append(out.results, checkGlobalServices(ctx, k.client, client, c, r.Name, res(Global)))
		}
	case release.Policy:
		out.results = append(out.results, checkNetworkSets(ctx, k.dyn, client, c, r.Name, res(NetworkSets)))
	case release.WireGuard:
		out.readNodes(ctx, client, c.LocalCluster())
	}
	return out
}

// readNodes lists the Nodes of the remote of client: their names, and whether one of them says
// it is the remote's gateway toward local.
func (p *probed) readNodes(ctx context.Context, client kubernetes.Interface, local string) {
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		p.nodesErr = err
		return
	}
	nodes := make([]peers.Node, 0, len(list.Items))
	for _, n := range list.Items {
		p.nodes = append(p.nodes, n.Name)
		nodes = append(nodes, peers.Node{Name: n.Name, Annotations: n.Annotations})
	}
	if p.throughGateway = peers.ThroughGateway(local, nodes); p.throughGateway {
		if gw, found, _ := peers.ActiveGateway(local, nodes); found {
			p.gateway = gw.Name
		}
	}
}

// probeReachable asks the remote for its version, from this machine; the credentials being
// rejected is an identity failure, not an unreachable remote.
func probeReachable(ctx context.Context, client kubernetes.Interface, r release.Remote, res func(string) Result) (Result, bool) {
	v, err := client.Discovery().ServerVersion()
	switch {
	case err == nil:
		return pass(res(ProbeReachable), "from this machine, %s answers (Kubernetes %s)", r.Config.Host, v.GitVersion), true
	case apierrors.IsUnauthorized(err):
		return fail(res(ProbeIdentity), "check-probe-identity",
			"remote %s (%s) rejects the credentials of Secrets %v (401 Unauthorized): the consumer's token was revoked, rotated or has expired; run kubectl semaphore link again to copy the current one",
			r.Name, r.Config.Host, r.Secrets), false
	default:
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fail(res(ProbeReachable), "check-probe-reachable",
			"remote %s: %s does not answer this machine with the credentials of Secrets %v: %v; the pods' own view is the reachable check; check the address, the CA and the network path from here",
			r.Name, r.Config.Host, r.Secrets, err), false
	}
}

// probeIdentity asks the remote, from this machine, who the credentials are.
func probeIdentity(ctx context.Context, client kubernetes.Interface, r release.Remote, res func(string) Result) (Result, bool) {
	user, err := remote.WhoAmI(ctx, client, "")
	if err != nil {
		if apierrors.IsUnauthorized(err) {
			return fail(res(ProbeIdentity), "check-probe-identity",
				"remote %s rejects the credentials of Secrets %v (401 Unauthorized): the consumer's token was revoked, rotated or has expired; run kubectl semaphore link again to copy the current one",
				r.Name, r.Secrets), false
		}
		return fail(res(ProbeIdentity), "check-probe-identity", "remote %s: who the credentials of Secrets %v are: %v", r.Name, r.Secrets, err), false
	}
	return pass(res(ProbeIdentity), "from this machine, the credentials are %s", user), true
}
