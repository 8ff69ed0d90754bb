package mesh_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/mesh"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// states is a mesh of two clusters that read each other, made by hand: gcp's tunnels are
// fresh, aws's credentials of gcp fail for policy (probed from this machine), and one tunnel
// from aws never shook hands.
func states() []mesh.ClusterState {
	ok := func(c string) mesh.Access {
		return mesh.Access{Component: c, Reachable: true, User: "system:serviceaccount:semaphore-remote:x"}
	}
	return []mesh.ClusterState{
		{
			Context: "gcp-admin", Cluster: "gcp", Nodes: []string{"gcp-1"},
			Remotes: []mesh.RemoteState{{
				Name:        "aws",
				Access:      []mesh.Access{ok("policy"), ok("service-mirror"), ok("wireguard")},
				Mirrors:     []mesh.Mirror{{Name: "aws-sys-log-73736d-fluentd", Source: "sys-log/fluentd", Endpoints: 3, Ready: 2}},
				NetworkSets: []mesh.NetworkSet{{Name: "aws-sys-log-fluentd", Source: "sys-log/fluentd", Nets: 3}},
				Peers: []mesh.Peer{
					{Node: "gcp-1", Remote: "aws", Peer: "aws-1", LastHandshake: now.Add(-15 * time.Second)},
					{Node: "gcp-1", Remote: "aws", Peer: "aws-2", LastHandshake: now.Add(-90 * time.Second)},
				},
			}},
			GlobalServices: []mesh.GlobalService{{Name: "gl-app-73736d-api", Service: "app/api", Endpoints: map[string]int{"gcp": 1, "aws": 2}}},
		},
		{
			Context: "aws-admin", Cluster: "aws", Nodes: []string{"aws-1", "aws-2"},
			Remotes: []mesh.RemoteState{{
				Name:   "gcp",
				Access: []mesh.Access{{Component: "policy", Error: "Unauthorized"}, ok("service-mirror"), ok("wireguard")},
				Peers: []mesh.Peer{
					{Node: "aws-1", Remote: "gcp", Peer: "gcp-1", LastHandshake: now.Add(-20 * time.Second)},
					{Node: "aws-2", Remote: "gcp", Peer: "gcp-1"},
				},
			}},
			Problems:      []string{"GlobalNetworkSets: the cluster does not serve projectcalico.org/v3"},
			ProbedRemotes: true,
		},
	}
}

func TestWriteTables(t *testing.T) {
	var b bytes.Buffer
	if err := mesh.WriteTables(&b, states(), now); err != nil {
		t.Fatal(err)
	}
	want := `CLUSTER gcp (context gcp-admin)

REMOTE  REACHABLE  MIRRORS  ENDPOINTS  NETWORK SETS  NETS  PEERS  OLDEST HANDSHAKE
aws     yes        1        2/3        1             3     2      90s

GLOBAL SERVICE  ENDPOINTS BY CLUSTER
app/api         aws=2 gcp=1

NODE   REMOTE  PEER   LAST HANDSHAKE
gcp-1  aws     aws-1  15s
gcp-1  aws     aws-2  90s

CLUSTER aws (context aws-admin)

REMOTE  REACHABLE    MIRRORS  ENDPOINTS  NETWORK SETS  NETS  PEERS  OLDEST HANDSHAKE
gcp     no (policy)  0        0/0        0             0     2      never

NODE   REMOTE  PEER   LAST HANDSHAKE
aws-1  gcp     gcp-1  20s
aws-2  gcp     gcp-1  never

Problems:
  - GlobalNetworkSets: the cluster does not serve projectcalico.org/v3
  - remote gcp is not reachable with the credentials of policy: Unauthorized
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("tables (-want +got):\n%s", diff)
	}
}

func TestWriteDOT(t *testing.T) {
	var b bytes.Buffer
	if err := mesh.WriteDOT(&b, states(), now); err != nil {
		t.Fatal(err)
	}
	dot := b.String()
	g := parseDOT(t, dot)

	if want := []string{"cluster_gcp", "cluster_aws"}; !cmp.Equal(g.subgraphs, want) {
		t.Errorf("subgraphs %v, want %v", g.subgraphs, want)
	}
	if want := map[string]string{
		"gcp": "cluster_gcp", "gcp/gcp-1": "cluster_gcp",
		"aws": "cluster_aws", "aws/aws-1": "cluster_aws", "aws/aws-2": "cluster_aws",
	}; !cmp.Equal(g.nodes, want) {
		t.Errorf("nodes (-want +got):\n%s", cmp.Diff(want, g.nodes))
	}
	// Each tunnel once, with the newer of its two ends' handshakes; a stale or missing one red.
	want := []edge{
		{"aws/aws-1", "gcp/gcp-1", `dir=none, label="15s"`},
		{"aws/aws-2", "gcp/gcp-1", `dir=none, label="90s"`},
		{"aws", "gcp", `label="1 mirrors\n1 sets, 3 nets", style=dashed`},
		{"gcp", "aws", `label="0 mirrors\n0 sets, 0 nets\nunreachable", style=dashed, color=red, fontcolor=red`},
	}
	if diff := cmp.Diff(want, g.edges); diff != "" {
		t.Errorf("edges (-want +got):\n%s\n%s", diff, dot)
	}
	for _, e := range g.edges {
		for _, id := range []string{e.From, e.To} {
			if _, ok := g.nodes[id]; !ok {
				t.Errorf("edge %s -> %s: node %s is in no subgraph", e.From, e.To, id)
			}
		}
	}
}

// A remote that is none of the states' clusters is drawn dashed, with the nodes its peers name;
// a tunnel that never shook hands is red.
func TestWriteDOTRemoteNotShown(t *testing.T) {
	st := states()[1:]
	var b bytes.Buffer
	if err := mesh.WriteDOT(&b, st, now); err != nil {
		t.Fatal(err)
	}
	g := parseDOT(t, b.String())
	if want := []string{"cluster_aws", "cluster_gcp"}; !cmp.Equal(g.subgraphs, want) {
		t.Errorf("subgraphs %v, want %v", g.subgraphs, want)
	}
	if !strings.Contains(b.String(), `label="gcp (not shown)"`) {
		t.Errorf("the remote not shown is not labelled so:\n%s", b.String())
	}
	if g.nodes["gcp/gcp-1"] != "cluster_gcp" {
		t.Errorf("the peer of the remote not shown is not in its box: %v", g.nodes)
	}
	var never *edge
	for i, e := range g.edges {
		if e.From == "aws/aws-2" {
			never = &g.edges[i]
		}
	}
	if never == nil || never.Attrs != `dir=none, label="never", color=red, fontcolor=red` {
		t.Errorf("tunnel that never shook hands: %+v", never)
	}
}

type edge struct{ From, To, Attrs string }

type dotGraph struct {
	subgraphs []string
	nodes     map[string]string // node ID -> its subgraph
	edges     []edge
}

var (
	idRE       = `"((?:[^"\\]|\\.)*)"`
	subgraphRE = regexp.MustCompile(`^subgraph ` + idRE + ` \{$`)
	nodeRE     = regexp.MustCompile(`^` + idRE + ` \[(.*)\];$`)
	edgeRE     = regexp.MustCompile(`^` + idRE + ` -> ` + idRE + ` \[(.*)\];$`)
	attrRE     = regexp.MustCompile(`^[a-z]+=.*;$`)
)

// parseDOT checks the structure of the graph WriteDOT writes (one statement a line) and returns
// it: a digraph, balanced braces, subgraphs not nested, every statement a graph attribute, a
// node, an edge or a subgraph's start or end, every quoted string properly escaped.
func parseDOT(t *testing.T, dot string) dotGraph {
	t.Helper()
	g := dotGraph{nodes: map[string]string{}}
	lines := strings.Split(strings.TrimSuffix(dot, "\n"), "\n")
	if lines[0] != "digraph semaphore {" || lines[len(lines)-1] != "}" {
		t.Fatalf("not one digraph:\n%s", dot)
	}
	current := ""
	for _, l := range lines[1 : len(lines)-1] {
		l = strings.TrimSpace(l)
		switch m := []([]string){subgraphRE.FindStringSubmatch(l), nodeRE.FindStringSubmatch(l), edgeRE.FindStringSubmatch(l)}; {
		case m[0] != nil:
			if current != "" {
				t.Fatalf("subgraph %s inside %s", m[0][1], current)
			}
			current = m[0][1]
			g.subgraphs = append(g.subgraphs, current)
		case l == "}":
			if current == "" {
				t.Fatalf("unbalanced }:\n%s", dot)
			}
			current = ""
		case m[2] != nil:
			g.edges = append(g.edges, edge{m[2][1], m[2][2], m[2][3]})
		case m[1] != nil:
			if current == "" {
				t.Errorf("node %s outside any subgraph", m[1][1])
			}
			g.nodes[m[1][1]] = current
		case attrRE.MatchString(l), strings.HasPrefix(l, "node ["):
		default:
			t.Errorf("not a statement: %q", l)
		}
	}
	if current != "" {
		t.Errorf("subgraph %s not closed", current)
	}
	return g
}

// Components that share a remote's credentials fail alike: one line per error, naming them.
func TestWriteTablesGroupsAccessErrors(t *testing.T) {
	st := mesh.ClusterState{Cluster: "gcp", ProbedRemotes: true, Remotes: []mesh.RemoteState{{Name: "aws", Access: []mesh.Access{
		{Component: "policy", Error: "Unauthorized"},
		{Component: "service-mirror", Error: "Unauthorized"},
		{Component: "wireguard", Error: "connection refused"},
	}}}}
	var b bytes.Buffer
	if err := mesh.WriteTables(&b, []mesh.ClusterState{st}, now); err != nil {
		t.Fatal(err)
	}
	want := `Problems:
  - remote aws is not reachable with the credentials of policy, service-mirror: Unauthorized
  - remote aws is not reachable with the credentials of wireguard: connection refused
`
	if !strings.HasSuffix(b.String(), want) || !strings.Contains(b.String(), "\naws     no  ") {
		t.Errorf("tables:\n%s\nwant them to end with\n%s", b.String(), want)
	}
}

// Not probed, a remote not known to answer a component is what the component's metrics do not
// say: they are where the error comes from, not this machine.
func TestWriteTablesSaysWhichMetricsDoNotSayTheRemoteAnswers(t *testing.T) {
	st := mesh.ClusterState{Cluster: "gcp", Remotes: []mesh.RemoteState{{Name: "aws", Access: []mesh.Access{
		{Component: "policy", Error: "pod semaphore-policy-0 says semaphore_policy_remote_up is 0"},
		{Component: "service-mirror", Reachable: true},
	}}}}
	var b bytes.Buffer
	if err := mesh.WriteTables(&b, []mesh.ClusterState{st}, now); err != nil {
		t.Fatal(err)
	}
	want := `Problems:
  - remote aws: the metrics of policy do not say it answers: pod semaphore-policy-0 says semaphore_policy_remote_up is 0
`
	if !strings.HasSuffix(b.String(), want) || !strings.Contains(b.String(), "\naws     no (policy)  ") {
		t.Errorf("tables:\n%s\nwant them to end with\n%s", b.String(), want)
	}
}

// The ServiceExports and ServiceImports are tables of their own: each export's conditions with
// the reason of those not as they should be, each import's type, IPs and endpoints, ready/all
// and by source cluster.
func TestWriteTablesShowsTheServiceExportsAndImports(t *testing.T) {
	st := mesh.ClusterState{Cluster: "gcp", Remotes: []mesh.RemoteState{{Name: "aws"}}, MultiCluster: &mesh.MultiCluster{
		Exports: []mesh.ServiceExport{
			{Name: "app/api", Valid: mesh.Condition{Status: "True", Reason: "Valid"}, Ready: mesh.Condition{Status: "True", Reason: "Exported"},
				Conflict: mesh.Condition{Status: "True", Reason: "PortConflict,TypeConflict"}},
			{Name: "app/gone", Valid: mesh.Condition{Status: "False", Reason: "NoService"}, Ready: mesh.Condition{Status: "False", Reason: "Failed"},
				Conflict: mesh.Condition{Status: "False", Reason: "NoConflicts"}},
			{Name: "app/new"},
		},
		Imports: []mesh.ServiceImport{
			{Name: "app/api", Type: "ClusterSetIP", IPs: []string{"10.0.0.9", "fd00::9"}, Endpoints: 3, Ready: 2, Clusters: map[string]int{"gcp": 1, "aws": 2}},
			{Name: "app/db", Type: "Headless", Clusters: map[string]int{}},
		},
	}}
	var b bytes.Buffer
	if err := mesh.WriteTables(&b, []mesh.ClusterState{st}, now); err != nil {
		t.Fatal(err)
	}
	want := `CLUSTER gcp

REMOTE  REACHABLE  MIRRORS  ENDPOINTS  NETWORK SETS  NETS  PEERS  OLDEST HANDSHAKE
aws     unknown    0        0/0        0             0     0      -

SERVICE EXPORT  VALID              READY           CONFLICT
app/api         True               True            True (PortConflict,TypeConflict)
app/gone        False (NoService)  False (Failed)  False
app/new         -                  -               -

SERVICE IMPORT  TYPE          IPS               ENDPOINTS  BY CLUSTER
app/api         ClusterSetIP  10.0.0.9,fd00::9  2/3        aws=2 gcp=1
app/db          Headless      -                 0/0        (none)
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("tables (-want +got):\n%s", diff)
	}

	st.MultiCluster = &mesh.MultiCluster{}
	b.Reset()
	if err := mesh.WriteTables(&b, []mesh.ClusterState{st}, now); err != nil {
		t.Fatal(err)
	}
	if want := "SERVICE EXPORT  VALID  READY  CONFLICT\n(none)\n\nSERVICE IMPORT  TYPE  IPS  ENDPOINTS  BY CLUSTER\n(none)\n"; !bytes.Contains(b.Bytes(), []byte(want)) {
		t.Errorf("no export nor import: want\n%s\nin\n%s", want, b.String())
	}
}
