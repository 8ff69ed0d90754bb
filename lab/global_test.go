package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Every node of a cluster is in a zone of its own, named after the cluster.
func TestNodeZones(t *testing.T) {
	l := &lab{dir: t.TempDir()}
	st := &State{Nodes: &NodesState{Nodes: l.labNodes()}}
	for _, c := range clusterNames() {
		if got, want := st.localZones(c), []string{c + "-a", c + "-b"}; !slices.Equal(got, want) {
			t.Errorf("zones of %s: %v, want %v", c, got, want)
		}
	}
	if got := (&State{Nodes: &NodesState{Skipped: "no root"}}).localZones("gcp"); len(got) != 0 {
		t.Errorf("zones without nodes: %v", got)
	}
}

// A line of the kubelet's log is the time, the stream, the tag and one of the sample program's
// JSON records; anything else is no record.
func TestParseLogLine(t *testing.T) {
	r, ok := parseLogLine(`2026-05-01T10:00:00.123456789Z stdout F {"time":"x","level":"INFO","msg":"request","listen":8080,"client":"198.18.2.5","method":"GET","path":"/","from":"echo-client-1"}`)
	if !ok || r.Msg != "request" || r.Client != "198.18.2.5" || r.Time != time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC) {
		t.Errorf("request line: %+v, %v", r, ok)
	}
	r, ok = parseLogLine(`2026-05-01T10:00:01Z stdout F {"level":"WARN","msg":"sent","url":"http://x/","err":"connection refused","duration":"1ms"}`)
	if !ok || r.Msg != "sent" || !r.failed() {
		t.Errorf("failed attempt: %+v, %v", r, ok)
	}
	r, ok = parseLogLine(`2026-05-01T10:00:01Z stdout F {"level":"INFO","msg":"sent","status":200,"reply":"served by echo-1"}`)
	if !ok || r.failed() || r.Reply != "served by echo-1" {
		t.Errorf("attempt served: %+v, %v", r, ok)
	}
	for _, bad := range []string{"", "2026-05-01T10:00:01Z stdout F", "yesterday stdout F {}", "2026-05-01T10:00:01Z stdout F not json"} {
		if r, ok := parseLogLine(bad); ok {
			t.Errorf("parseLogLine(%q) = %+v, true", bad, r)
		}
	}
}

// The longest outage runs from the first failure to the next success, or to the last attempt
// while failures last.
func TestOutage(t *testing.T) {
	at := func(ms int, ok bool) logRecord {
		r := logRecord{Msg: "sent", Time: time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond), Status: 200}
		if !ok {
			r.Status, r.Err = 0, "refused"
		}
		return r
	}
	for _, tc := range []struct {
		attempts []logRecord
		failed   int
		longest  time.Duration
	}{
		{nil, 0, 0},
		{[]logRecord{at(0, true), at(200, true)}, 0, 0},
		{[]logRecord{at(0, true), at(200, false), at(400, false), at(600, true), at(800, false), at(900, true)}, 3, 400 * time.Millisecond},
		{[]logRecord{at(0, false), at(1000, false), at(3000, false)}, 3, 3 * time.Second},
	} {
		failed, longest := outage(tc.attempts)
		if failed != tc.failed || longest != tc.longest {
			t.Errorf("outage of %d attempts = %d, %s; want %d, %s", len(tc.attempts), failed, longest, tc.failed, tc.longest)
		}
	}
}

// A window is local when only the client's cluster served, remote when only the others did.
func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		counts        map[string]int
		local, remote bool
	}{
		{map[string]int{"aws": 0, "gcp": 10, "merit": 0}, true, false},
		{map[string]int{"aws": 1, "gcp": 9, "merit": 0}, false, false},
		{map[string]int{"aws": 4, "gcp": 0, "merit": 6}, false, true},
		{map[string]int{"aws": 0, "gcp": 0, "merit": 0}, false, false},
	} {
		w := window{counts: tc.counts, to: time.Unix(2, 0), from: time.Unix(0, 0)}
		if w.local() != tc.local || w.remote() != tc.remote {
			t.Errorf("%s: local %v remote %v, want %v %v", w, w.local(), w.remote(), tc.local, tc.remote)
		}
	}
}

// The global Service is compared with every cluster's echo pods and the local zones: a local
// endpoint hinted for other zones than the local ones, a remote one hinted for a local zone
// or not at all, or a missing cluster are problems.
func TestGlobalServiceProblems(t *testing.T) {
	l := &lab{dir: t.TempDir()}
	st := &State{Nodes: &NodesState{Nodes: l.labNodes()}, Pods: []PodState{
		{Cluster: "aws", App: globalName, IP: "198.18.1.5"},
		{Cluster: "gcp", App: globalName, IP: "198.18.2.5"},
		{Cluster: "gcp", App: globalName, IP: "198.18.2.133"},
		{Cluster: "merit", App: globalName, IP: "198.18.3.5"},
	}}
	good := func() GlobalServiceStatus {
		return GlobalServiceStatus{
			Name: "gl-sys-log-73736d-echo", Key: globalKey, Ports: globalPorts,
			Slices: map[string]int{"aws": 1, "gcp": 1, "merit": 1},
			Endpoints: []GlobalEndpoint{
				{Cluster: "aws", Addr: "198.18.1.5", Ready: true, Zones: []string{"remote"}},
				{Cluster: "gcp", Addr: "198.18.2.133", Ready: true, Zones: []string{"gcp-a", "gcp-b"}},
				{Cluster: "gcp", Addr: "198.18.2.5", Ready: true, Zones: []string{"gcp-a", "gcp-b"}},
				{Cluster: "merit", Addr: "198.18.3.5", Ready: true, Zones: []string{"remote"}},
			},
		}
	}
	if p := globalServiceProblems(st, "gcp", good()); len(p) > 0 {
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
		p := globalServiceProblems(st, "gcp", s)
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
