package check

import (
	"testing"
)

// SEMAPHORE_WG_POD_CIDRS_FROM is one source for every remote or remote:source pairs.
func TestPodCIDRsFrom(t *testing.T) {
	for _, c := range []struct{ value, remote, want string }{
		{"", "aws", "node"},
		{"calico-ipam", "aws", "calico-ipam"},
		{"aws:calico-ipam,merit:node", "aws", "calico-ipam"},
		{"aws:calico-ipam,merit:node", "merit", "node"},
		{"aws:calico-ipam", "gcp", "node"},
	} {
		if got := podCIDRsFrom(c.value, c.remote); got != c.want {
			t.Errorf("podCIDRsFrom(%q, %q) = %q, want %q", c.value, c.remote, got, c.want)
		}
	}
}

// What is allowed is never also forbidden, and reading what no component needs is, but for
// ServiceExports, which semaphore-remote lets every service mirror read: writing them is.
func TestForbidden(t *testing.T) {
	allowed := append(services.with("list", "watch"), endpointSlices.with("list", "watch")...)
	for _, p := range forbidden(allowed) {
		if p.resourceOnly() == serviceExports && p.verb == "list" {
			t.Errorf("%s is forbidden to a service mirror that does not serve the Multi-Cluster Services API", p)
		}
	}
	allowed = append(allowed, serviceExports.with("list", "watch")...)
	deny := forbidden(allowed)
	for _, p := range deny {
		for _, a := range allowed {
			if p == a {
				t.Errorf("%s is both needed and forbidden", p)
			}
		}
	}
	for _, p := range []probe{{resource: "pods", verb: "list"}, {resource: "nodes", verb: "list"}, {resource: "secrets", verb: "get"}, {resource: "services", verb: "create"},
		{group: "multicluster.x-k8s.io", resource: "serviceexports", verb: "update"}} {
		found := false
		for _, d := range deny {
			found = found || d == p
		}
		if !found {
			t.Errorf("%s is not forbidden", p)
		}
	}
}
