package mesh

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/agents"
)

// WriteDOT writes the states as one Graphviz graph: a box per cluster holding its nodes and a
// node for the cluster itself; between the nodes of two clusters, the WireGuard tunnels,
// labelled with the age of their last handshake (red when never or stale); from each remote to
// the cluster that reads it, what is made of it (mirrors, network sets), red when the cluster
// cannot reach it. A remote that is none of the states' clusters is drawn dashed, with the
// nodes its peers name.
func WriteDOT(w io.Writer, states []ClusterState, now time.Time) error {
	g := graphOf(states)
	var b strings.Builder
	b.WriteString("digraph semaphore {\n")
	b.WriteString("  compound=true;\n  rankdir=LR;\n  node [shape=box, style=rounded];\n")
	g.writeClusters(&b)
	g.writeTunnels(&b, now)
	writeReads(&b, states)
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// dotGraph holds the clusters in the order first met, each one's nodes, and the tunnels
// between nodes in the order first met, each with its last handshake.
type dotGraph struct {
	order    []string
	external map[string]bool
	nodes    map[string][]string
	tunnels  []tunnel
	newest   map[tunnel]time.Time
}

// tunnel joins two nodes, by ID, a before b.
type tunnel struct{ a, b string }

// graphOf is the graph of the states: their clusters with their nodes, and the remotes with
// the nodes their peers name, joined by the tunnels of the peers.
func graphOf(states []ClusterState) *dotGraph {
	g := &dotGraph{nodes: map[string][]string{}, newest: map[tunnel]time.Time{}}
	for _, st := range states {
		g.cluster(st.Cluster, false)
		for _, n := range st.Nodes {
			g.node(st.Cluster, n)
		}
	}
	for _, st := range states {
		for _, r := range st.Remotes {
			g.cluster(r.Name, true)
			for _, p := range r.Peers {
				g.node(st.Cluster, p.Node)
				g.node(r.Name, p.Peer)
				g.tunnel(nodeID(st.Cluster, p.Node), nodeID(r.Name, p.Peer), p.LastHandshake)
			}
		}
	}
	return g
}

// tunnel adds the tunnel between nodes a and b, last handshaken at: a tunnel is seen from both
// ends, and drawn once, with the newer handshake.
func (g *dotGraph) tunnel(a, b string, at time.Time) {
	if b < a {
		a, b = b, a
	}
	t := tunnel{a, b}
	prev, seen := g.newest[t]
	if !seen {
		g.tunnels = append(g.tunnels, t)
	}
	if !seen || at.After(prev) {
		g.newest[t] = at
	}
}

// writeClusters writes a box per cluster holding its nodes and a node for the cluster itself.
func (g *dotGraph) writeClusters(b *strings.Builder) {
	for _, c := range g.order {
		fmt.Fprintf(b, "  subgraph %s {\n", quote("cluster_"+c))
		label := c
		if g.external[c] {
			label += " (not shown)"
			b.WriteString("    style=dashed;\n")
		}
		fmt.Fprintf(b, "    label=%s;\n", quote(label))
		fmt.Fprintf(b, "    %s [label=%s, shape=component];\n", quote(c), quote(c))
		for _, n := range g.nodes[c] {
			fmt.Fprintf(b, "    %s [label=%s];\n", quote(nodeID(c, n)), quote(n))
		}
		b.WriteString("  }\n")
	}
}

// writeTunnels writes the tunnels labelled with the age of their last handshake, red when
// never or stale.
func (g *dotGraph) writeTunnels(b *strings.Builder, now time.Time) {
	for _, t := range g.tunnels {
		hs := g.newest[t]
		attrs := fmt.Sprintf("dir=none, label=%s", quote(age(hs, now)))
		if hs.IsZero() || now.Sub(hs) > agents.MaxHandshakeAge {
			attrs += ", color=red, fontcolor=red"
		}
		fmt.Fprintf(b, "  %s -> %s [%s];\n", quote(t.a), quote(t.b), attrs)
	}
}

// writeReads writes, from each remote to the cluster that reads it, what is made of it, red
// when the cluster cannot reach it.
func writeReads(b *strings.Builder, states []ClusterState) {
	for _, st := range states {
		for _, r := range st.Remotes {
			nets := 0
			for _, s := range r.NetworkSets {
				nets += s.Nets
			}
			label := fmt.Sprintf("%d mirrors\\n%d sets, %d nets", len(r.Mirrors), len(r.NetworkSets), nets)
			attrs := "style=dashed"
			if !r.Reachable() {
				label += "\\nunreachable"
				attrs += ", color=red, fontcolor=red"
			}
			fmt.Fprintf(b, "  %s -> %s [label=\"%s\", %s];\n", quote(r.Name), quote(st.Cluster), escape(label), attrs)
		}
	}
}

// cluster adds cluster c; external is true when it is only known as someone's remote, until
// it is met as a state of its own.
func (g *dotGraph) cluster(c string, external bool) {
	if g.external == nil {
		g.external = map[string]bool{}
	}
	if ext, ok := g.external[c]; ok {
		g.external[c] = ext && external
		return
	}
	g.order = append(g.order, c)
	g.external[c] = external
}

func (g *dotGraph) node(c, n string) {
	if n != "" && !slices.Contains(g.nodes[c], n) {
		g.nodes[c] = append(g.nodes[c], n)
	}
}

// nodeID is a node's ID in the graph: node names are unique only within a cluster.
func nodeID(cluster, node string) string { return cluster + "/" + node }

// quote makes s a DOT quoted string.
func quote(s string) string {
	return `"` + escape(strings.ReplaceAll(s, `\`, `\\`)) + `"`
}

// escape escapes the double quotes of s; backslashes are left alone, for "\n" in labels.
func escape(s string) string { return strings.ReplaceAll(s, `"`, `\"`) }
