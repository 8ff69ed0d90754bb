package status

import (
	"slices"
	"strings"
	"testing"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// The global Service is compared with every cluster's echo pods and the local zones: a local
// endpoint hinted for other zones than the local ones, a remote one hinted for a local zone
// or not at all, or a missing cluster are problems.
func TestGlobalServiceProblems(t *testing.T) {
	rec := &layout.Record{Nodes: &layout.Nodes{Nodes: layout.LabNodes(t.TempDir())}, Pods: []layout.Pod{
		{Cluster: "aws", App: layout.GlobalName, IP: "198.18.1.5"},
		{Cluster: "gcp", App: layout.GlobalName, IP: "198.18.2.5"},
		{Cluster: "gcp", App: layout.GlobalName, IP: "198.18.2.133"},
		{Cluster: "merit", App: layout.GlobalName, IP: "198.18.3.5"},
	}}
	good := func() GlobalServiceStatus {
		return GlobalServiceStatus{
			Name: "gl-sys-log-73736d-echo", Key: layout.GlobalKey, Ports: layout.GlobalPorts,
			Slices: map[string]int{"aws": 1, "gcp": 1, "merit": 1},
			Endpoints: []GlobalEndpoint{
				{Cluster: "aws", Addr: "198.18.1.5", Ready: true, Zones: []string{"remote"}},
				{Cluster: "gcp", Addr: "198.18.2.133", Ready: true, Zones: []string{"gcp-a", "gcp-b"}},
				{Cluster: "gcp", Addr: "198.18.2.5", Ready: true, Zones: []string{"gcp-a", "gcp-b"}},
				{Cluster: "merit", Addr: "198.18.3.5", Ready: true, Zones: []string{"remote"}},
			},
		}
	}
	if p := globalServiceProblems(rec, "gcp", good()); len(p) > 0 {
		t.Errorf("problems of a good global Service: %v", p)
	}
	for _, tc := range []struct {
		change func(*GlobalServiceStatus)
		want   string
	}{
		{func(s *GlobalServiceStatus) { s.Endpoints[1].Zones = []string{"gcp-a"} }, "local endpoint 198.18.2.133 is hinted for zones [gcp-a]"},
		{func(s *GlobalServiceStatus) { s.Endpoints[0].Zones = nil }, "endpoint 198.18.1.5 of aws has no zone hint"},
		{func(s *GlobalServiceStatus) { s.Endpoints[3].Zones = []string{"gcp-b"} }, "endpoint 198.18.3.5 of merit is hinted for local zones"},
		{func(s *GlobalServiceStatus) { s.Endpoints[3].Ready = false }, "1 endpoints of merit not ready"},
		{func(s *GlobalServiceStatus) { s.Endpoints = s.Endpoints[:3]; delete(s.Slices, "merit") }, "no EndpointSlice of merit"},
		{func(s *GlobalServiceStatus) { s.Endpoints = s.Endpoints[1:] }, "has endpoints [] of aws, want [198.18.1.5]"},
		{func(s *GlobalServiceStatus) { s.Ports = []string{"http:80/TCP"} }, "has ports [http:80/TCP]"},
	} {
		s := good()
		tc.change(&s)
		p := globalServiceProblems(rec, "gcp", s)
		if !slices.ContainsFunc(p, func(p string) bool { return strings.Contains(p, tc.want) }) {
			t.Errorf("problems %q, want one with %q", p, tc.want)
		}
	}
}

// The endpoints of a cluster are listed with their zone hints once when they are alike.
func TestEndpointsLine(t *testing.T) {
	eps := []GlobalEndpoint{
		{Cluster: "aws", Addr: "198.18.1.5", Ready: true, Zones: []string{"aws-a", "aws-b"}},
		{Cluster: "aws", Addr: "198.18.1.6", Zones: []string{"aws-a", "aws-b"}},
		{Cluster: "gcp", Addr: "198.18.2.5", Ready: true, Zones: []string{"x"}},
		{Cluster: "gcp", Addr: "198.18.2.6", Ready: true},
	}
	for _, tc := range []struct{ cluster, want string }{
		{"aws", "198.18.1.5, 198.18.1.6 (not ready)\tzone hints aws-a,aws-b"},
		{"gcp", "198.18.2.5 (zone hints x), 198.18.2.6 (zone hints none)"},
		{"merit", "no endpoint"},
	} {
		if got := endpointsLine(eps, tc.cluster); got != tc.want {
			t.Errorf("endpointsLine(%s) = %q, want %q", tc.cluster, got, tc.want)
		}
	}
}
