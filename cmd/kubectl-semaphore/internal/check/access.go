package check

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// probe is one cluster-wide access review: may the identity do verb on resource?
type probe struct{ group, resource, verb string }

func (p probe) String() string {
	if p.group == "" {
		return p.verb + " " + p.resource
	}
	return p.verb + " " + p.resource + "." + p.group
}

func (p probe) resourceOnly() probe { return probe{group: p.group, resource: p.resource} }

var (
	services       = probe{resource: "services"}
	endpointSlices = probe{group: "discovery.k8s.io", resource: "endpointslices"}
	pods           = probe{resource: "pods"}
	nodes          = probe{resource: "nodes"}
	ipamBlocks     = probe{group: "crd.projectcalico.org", resource: "ipamblocks"}
	secrets        = probe{resource: "secrets"}
	serviceExports = probe{group: mcsv1beta1.GroupName, resource: mcsv1beta1.ServiceExportPluralName}
)

func (p probe) with(verbs ...string) []probe {
	out := make([]probe, 0, len(verbs))
	for _, v := range verbs {
		out = append(out, probe{group: p.group, resource: p.resource, verb: v})
	}
	return out
}

// needs is what component c needs in remote: the reads of its informers (and, for wireguard
// reading the remote's Calico IPAM blocks, those; for a service mirror serving the Multi-Cluster
// Services API, the ServiceExports).
func needs(c release.Component, remote string) []probe {
	switch c.Name {
	case release.ServiceMirror:
		out := append(services.with("list", "watch"), endpointSlices.with("list", "watch")...)
		if c.ServesMCS() {
			out = append(out, serviceExports.with("list", "watch")...)
		}
		return out
	case release.Policy:
		return pods.with("list", "watch")
	case release.WireGuard:
		out := nodes.with("list", "watch")
		if podCIDRsFrom(c.Env["SEMAPHORE_WG_POD_CIDRS_FROM"], remote) == "calico-ipam" {
			out = append(out, ipamBlocks.with("get", "list", "watch")...)
		}
		return out
	}
	return nil
}

// podCIDRsFrom is the source of remote's pod addresses in SEMAPHORE_WG_POD_CIDRS_FROM: one
// value for every remote, or remote:source pairs; node by default.
func podCIDRsFrom(value, remote string) string {
	value = strings.TrimSpace(value)
	if value != "" && !strings.Contains(value, ":") {
		return value
	}
	for _, pair := range strings.Split(value, ",") {
		if r, src, ok := strings.Cut(strings.TrimSpace(pair), ":"); ok && r == remote {
			return src
		}
	}
	return "node"
}

// allowedByRemote is, per remote, what the components of the cluster that read it need
// together: semaphore-remote binds a consumer to one ClusterRole for every enabled component,
// so each component's credentials may read what the others need, and nothing else.
func allowedByRemote(components []release.Component) map[string][]probe {
	out := map[string][]probe{}
	for _, c := range components {
		for _, r := range c.RemoteNames() {
			for _, p := range needs(c, r) {
				if !slices.Contains(out[r], p) {
					out[r] = append(out[r], p)
				}
			}
		}
	}
	return out
}

// forbidden are the reviews that must be denied given what is allowed: any write of the
// resources Semaphore reads, reading Secrets, and reading the resources no component needs
// (ServiceExports aside).
// get is tolerated on every resource that is allowed to be listed (the chart grants it).
func forbidden(allowed []probe) []probe {
	var out []probe
	read := map[probe]bool{}
	for _, p := range allowed {
		read[p.resourceOnly()] = true
	}
	for _, r := range []probe{services, endpointSlices, pods, nodes, ipamBlocks} {
		out = append(out, r.with("create", "update", "patch", "delete", "deletecollection")...)
		if !read[r] {
			out = append(out, r.with("list")...)
		}
	}
	// semaphore-remote lets every service mirror read the ServiceExports, whether it serves the
	// API or not: only writing them is forbidden.
	out = append(out, serviceExports.with("create", "update", "patch", "delete", "deletecollection")...)
	return append(out, secrets.with("get", "list", "watch", "create")...)
}

// review asks whether the client's identity may do p cluster-wide; the reason names the
// binding and role that allow it (RBAC says so).
func review(ctx context.Context, client kubernetes.Interface, p probe) (bool, string, error) {
	r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: p.group, Resource: p.resource, Verb: p.verb,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", err
	}
	return r.Status.Allowed, r.Status.Reason, nil
}

// probeAccess asks the remote, from this machine, whether the credentials may do what the
// component needs and nothing beyond what the components of this cluster reading the remote need
// together.
func probeAccess(ctx context.Context, client kubernetes.Interface, c release.Component, r release.Remote, allowed []probe, res Result) Result {
	need := needs(c, r.Name)
	deny := forbidden(allowed)
	type answer struct {
		allowed bool
		reason  string
		err     error
	}
	answers := make([]answer, len(need)+len(deny))
	var wg sync.WaitGroup
	for i, p := range append(append([]probe(nil), need...), deny...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, reason, err := review(ctx, client, p)
			answers[i] = answer{a, reason, err}
		}()
	}
	wg.Wait()

	var missing, extra, errs []string
	for i, p := range need {
		switch a := answers[i]; {
		case a.err != nil:
			errs = append(errs, fmt.Sprintf("%s: %v", p, a.err))
		case !a.allowed:
			missing = append(missing, p.String())
		}
	}
	for i, p := range deny {
		switch a := answers[len(need)+i]; {
		case a.err != nil:
			errs = append(errs, fmt.Sprintf("%s: %v", p, a.err))
		case a.allowed:
			e := p.String()
			if a.reason != "" {
				e += " (" + a.reason + ")"
			}
			extra = append(extra, e)
		}
	}
	switch {
	case len(errs) > 0:
		return fail(res, "check-probe-access", "remote %s: access reviews failed: %s", r.Name, strings.Join(errs, "; "))
	case len(missing) > 0 && len(extra) > 0:
		return fail(res, "check-probe-access", "remote %s does not let %s %s, and lets it %s: install semaphore-remote there with this cluster as a consumer and the components it runs, and remove the other bindings",
			r.Name, c.Name, strings.Join(missing, ", "), strings.Join(extra, "; "))
	case len(missing) > 0:
		return fail(res, "check-probe-access", "remote %s does not let %s %s cluster-wide: enable the component in the remote's semaphore-remote release (components, calicoIPAM of this consumer)",
			r.Name, c.Name, strings.Join(missing, ", "))
	case len(extra) > 0:
		return fail(res, "check-probe-access", "remote %s grants these credentials more than this cluster's Semaphore components need: %s; remove that binding, or disable in the remote's semaphore-remote release the components this cluster does not run",
			r.Name, strings.Join(extra, "; "))
	}
	var ns []string
	for _, p := range need {
		ns = append(ns, p.String())
	}
	return pass(res, "from this machine: may %s, and nothing more than this cluster's components need (%d reviews)", strings.Join(ns, ", "), len(need)+len(deny))
}
