// Package mesh collects what Semaphore made of one cluster's place in the mesh: its remotes and
// whether they answer the controllers, the mirrors and network sets made from each, the global
// services, the ServiceExports and ServiceImports of the Multi-Cluster Services API, and the
// WireGuard peers with their last handshake. It reads the local cluster only,
// the controllers' pods' metrics through its API server's pod proxy included: nothing connects to
// an address read from the cluster's objects unless asked (Sources.ProbeRemotes). The status and
// graph commands are two views of the same ClusterState, so the views are tested on states made
// by hand and the collection against real API servers.
package mesh

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/agents"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
)

// ClusterState is one cluster's view of the mesh.
type ClusterState struct {
	// Context is the kubeconfig context it was read through ("" for the current one).
	Context string `json:"context,omitempty"`
	// Cluster is the name the controllers give the local cluster (SEMAPHORE_LOCAL_CLUSTER).
	Cluster string `json:"cluster"`
	// Components are the controllers found, as Kind namespace/name.
	Components []string `json:"components"`
	// Nodes are the local nodes that run semaphore-wireguard.
	Nodes          []string        `json:"nodes,omitempty"`
	Remotes        []RemoteState   `json:"remotes"`
	GlobalServices []GlobalService `json:"globalServices,omitempty"`
	// MultiCluster is what the service mirror serves of the Multi-Cluster Services API; nil when
	// it does not serve it, or the cluster does not (a problem says so).
	MultiCluster *MultiCluster `json:"multiCluster,omitempty"`
	// ProbedRemotes says that the remotes' Access comes from asking each remote from this machine
	// (Sources.ProbeRemotes), not from the controllers' metrics.
	ProbedRemotes bool `json:"probedRemotes,omitempty"`
	// Problems are what could not be read, each a sentence.
	Problems []string `json:"problems,omitempty"`
}

// RemoteState is what the cluster has of one remote.
type RemoteState struct {
	Name string `json:"name"`
	// Access is, for each component that reads the remote, whether the remote answers it.
	Access      []Access     `json:"access"`
	Mirrors     []Mirror     `json:"mirrors"`
	NetworkSets []NetworkSet `json:"networkSets"`
	Peers       []Peer       `json:"peers"`
}

// Reachable reports whether the remote answers every component.
func (r RemoteState) Reachable() bool {
	for _, a := range r.Access {
		if !a.Reachable {
			return false
		}
	}
	return len(r.Access) > 0
}

// Access is whether a remote's API server answers a component and accepts its credentials: as
// the component's pods say in their metrics, or as the remote answers this machine with the
// component's credentials (ClusterState.ProbedRemotes).
type Access struct {
	Component string `json:"component"`
	Reachable bool   `json:"reachable"`
	// User is who the remote says the credentials are.
	User string `json:"user,omitempty"`
	// LastSync is when the pods whose view counts last synced their view of the remote, the
	// oldest of them; zero when probed or never.
	LastSync time.Time `json:"lastSync,omitzero"`
	// Error says why the remote is not known to answer.
	Error string `json:"error,omitempty"`
}

// Mirror is a local mirror Service of a remote Service.
type Mirror struct {
	// Name is the mirror's own name; Source the remote Service's namespace/name.
	Name   string `json:"name"`
	Source string `json:"source"`
	// Endpoints counts the endpoints of its EndpointSlices, Ready those not marked unready.
	Endpoints int `json:"endpoints"`
	Ready     int `json:"ready"`
}

// GlobalService is a local global Service and its endpoints by the cluster they come from.
type GlobalService struct {
	Name string `json:"name"`
	// Service is the global service's namespace/name, the same in every cluster.
	Service   string         `json:"service"`
	Endpoints map[string]int `json:"endpoints"`
}

// NetworkSet is a GlobalNetworkSet that semaphore-policy made for a remote's pods.
type NetworkSet struct {
	Name string `json:"name"`
	// Source is the pods' namespace and policy label value, as namespace/name.
	Source string `json:"source"`
	Nets   int    `json:"nets"`
}

// Peer is a WireGuard peer of a local node (its agent's peer): a node of a remote.
type Peer = agents.Peer

// Sources are what Collect reads from.
type Sources struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Metrics reads the controllers' pods' metrics; nil is through the API server's pod proxy.
	Metrics agents.MetricsSource
	// Namespace narrows the search for the controllers ("" for every namespace).
	Namespace string
	// Timeout bounds each read of a pod's metrics and each request to a remote (default 5s).
	Timeout time.Duration
	// Now is the current time, which the age of the pods' views of the remotes is counted
	// from (default time.Now).
	Now func() time.Time
	// ProbeRemotes asks each remote, from this machine and with each component's credentials
	// (read from the cluster's Secrets), who they are there, instead of reading whether it
	// answers the components from their metrics. It is the only part of Collect that connects
	// to an address read from the cluster's objects.
	ProbeRemotes bool
	// Credentials say whether the remotes' kubeconfigs, read from the cluster's Secrets, may
	// run exec credential plugins and auth-providers on this machine (with ProbeRemotes).
	Credentials release.CredentialOptions
}

func (s Sources) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// Collect reads the state of the cluster of s.Client, connecting to its API server alone unless
// s.ProbeRemotes. It fails only when no Semaphore controller can be found; whatever else cannot
// be read is one of the state's Problems.
func Collect(ctx context.Context, s Sources) (ClusterState, error) {
	var st ClusterState
	components, err := release.Find(ctx, s.Client, s.Namespace)
	if err != nil {
		return st, err
	}
	if len(components) == 0 {
		return st, fmt.Errorf("no Semaphore controller (workloads labelled %s) in %s", release.PartOf, release.Where(s.Namespace))
	}
	byName := st.controllers(components)
	remotes := remoteStates{}
	for _, c := range byName {
		for _, name := range c.RemoteNames() {
			remotes.get(name)
		}
	}

	views := readViews(ctx, s, byName)
	if s.ProbeRemotes {
		st.ProbedRemotes = true
		st.probe(ctx, s, byName, remotes.get)
	} else {
		accessFromMetrics(views, s.now(), remotes.get)
	}
	if c, ok := byName[release.ServiceMirror]; ok {
		st.mirrors(ctx, s, c, remotes.get)
		st.multiCluster(ctx, s, c)
	}
	if c, ok := byName[release.Policy]; ok {
		st.networkSets(ctx, s, c, remotes.get)
	}
	if v, ok := views[release.WireGuard]; ok {
		st.peers(v, remotes.get)
	}

	st.Remotes = remotes.sorted()
	slices.SortFunc(st.GlobalServices, func(a, b GlobalService) int { return strings.Compare(a.Service, b.Service) })
	slices.Sort(st.Nodes)
	return st, nil
}

// controllers lists the components in the state and returns them by name, the first of each
// name: a second is a problem. The first that names the local cluster names the state's.
func (st *ClusterState) controllers(components []release.Component) map[string]release.Component {
	byName := map[string]release.Component{}
	for _, c := range components {
		st.Components = append(st.Components, c.WorkloadRef())
		if prev, ok := byName[c.Name]; ok {
			st.problem("several %s controllers (%s/%s and %s/%s): showing the first", c.Name, prev.Namespace, prev.Workload, c.Namespace, c.Workload)
			continue
		}
		byName[c.Name] = c
		if st.Cluster == "" {
			st.Cluster = c.LocalCluster()
		}
	}
	return byName
}

// remoteStates are the states of the remotes by name, each made when first met.
type remoteStates map[string]*RemoteState

func (rs remoteStates) get(name string) *RemoteState {
	r, ok := rs[name]
	if !ok {
		r = &RemoteState{Name: name, Access: []Access{}, Mirrors: []Mirror{}, NetworkSets: []NetworkSet{}, Peers: []Peer{}}
		rs[name] = r
	}
	return r
}

// sorted are the states by name, the lists of each in a stable order.
func (rs remoteStates) sorted() []RemoteState {
	var out []RemoteState
	for _, r := range rs {
		slices.SortFunc(r.Access, func(a, b Access) int { return strings.Compare(a.Component, b.Component) })
		slices.SortFunc(r.Mirrors, func(a, b Mirror) int { return strings.Compare(a.Source, b.Source) })
		slices.SortFunc(r.NetworkSets, func(a, b NetworkSet) int { return strings.Compare(a.Source, b.Source) })
		slices.SortFunc(r.Peers, func(a, b Peer) int {
			return cmp.Or(strings.Compare(a.Node, b.Node), strings.Compare(a.Peer, b.Peer))
		})
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b RemoteState) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (st *ClusterState) problem(format string, args ...any) {
	st.Problems = append(st.Problems, fmt.Sprintf(format, args...))
}
