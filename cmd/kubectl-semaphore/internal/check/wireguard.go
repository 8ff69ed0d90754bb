package check

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/agents"
	"github.com/kube-semaphore/semaphore/cmd/kubectl-semaphore/internal/release"
	"github.com/kube-semaphore/semaphore/internal/promtext"
	"github.com/kube-semaphore/semaphore/internal/remotepairs"
)

// The metrics of semaphore-wireguard the checks read, besides agents.HandshakeMetric. Agents of
// a version without one are told apart and named in a warning.
const (
	skippedPeersMetric          = "semaphore_wg_skipped_peers"
	peersWithoutHandshakeMetric = "semaphore_wg_peers_without_handshake"
	peerInfoMetric              = "semaphore_wg_peer_info"
	deviceInfoMetric            = "semaphore_wg_device_info"
	deviceMTUMetric             = "semaphore_wg_device_mtu"
	pathMTUMetric               = "semaphore_wg_path_mtu"
	gatewayRoleMetric           = "semaphore_wg_gateway_role"
)

// checkPeers checks that every agent that peers with remote has as peers every node of remote:
// its Nodes when p listed them from this machine, else every peer any agent has. When the remote
// reaches this cluster through its gateway, that node alone is every agent's peer; when this
// cluster reaches the remote through gateways, only its active gateway peers, and exactly one
// agent must be it. Nodes an agent skipped (semaphore_wg_skipped_peers) are named with the
// reasons.
func (k *checker) checkPeers(v controllers, remote string, p probed, res Result) Result {
	if p.nodesErr != nil {
		return fail(res, "check-probe-access", "listing the nodes of remote %s from this machine: %v", remote, p.nodesErr)
	}
	var unread []string
	have := map[string]map[string]bool{}
	for _, a := range v.pods {
		if a.err != nil {
			unread = append(unread, fmt.Sprintf("%s: %v", v.where(a), a.err))
			continue
		}
		have[a.pod.Name] = agentPeers(a.metrics, remote)
	}
	if len(unread) > 0 {
		return fail(res, "check-peers", "reading the metrics of the wireguard agents through the API server's pod proxy: %s", most(unread, 3))
	}
	holders, gateway, problem := peerHolders(v, remote)
	if problem != "" {
		return fail(res, "check-gateway", "%s", problem)
	}
	want, of := p.nodes, fmt.Sprintf("the %d nodes of remote %s", len(p.nodes), remote)
	switch {
	case p.throughGateway && p.gateway == "":
		return fail(res, "check-gateway", "remote %s is reached through its gateway, but none of its nodes says it is the active one: no pod of it is reachable", remote)
	case p.throughGateway:
		want, of = []string{p.gateway}, fmt.Sprintf("remote %s's active gateway %s", remote, p.gateway)
	case p.nodes == nil:
		want = union(have)
		of = fmt.Sprintf("the %d peers of remote %s the agents have together", len(want), remote)
	}
	var missing, skipped []string
	for _, a := range holders {
		var lacks []string
		for _, n := range want {
			if !have[a.pod.Name][n] {
				lacks = append(lacks, n)
			}
		}
		if len(lacks) > 0 {
			missing = append(missing, fmt.Sprintf("%s lacks %s", v.where(a), most(lacks, 5)))
		}
		if why := skippedReasons(a.metrics, remote); why != "" {
			skipped = append(skipped, fmt.Sprintf("%s: %s", v.where(a), why))
		}
	}
	switch {
	case len(missing) > 0:
		return fail(res, "check-peers", "%d agents do not have all of %s as peers: %s; %s{remote=%q} says why",
			len(missing), of, most(missing, 5), skippedPeersMetric, remote)
	case len(skipped) > 0:
		return fail(res, "check-peers", "nodes of remote %s are skipped, not peers, by reason: %s", remote, most(skipped, 5))
	case len(want) == 0:
		return fail(res, "check-peers", "no agent has a peer of remote %s, and none skipped a node: their view of it is empty (see reachable)", remote)
	case gateway != "":
		return pass(res, "this cluster reaches remote %s through its gateway %s, which has %s as peers; the %d other agents route to it", remote, gateway, of, len(v.pods)-1)
	}
	return pass(res, "each of %d agents has %s as peers", len(v.pods), of)
}

// peerHolders are the agents that peer with remote: every agent, or when this cluster reaches
// it through gateways (the agents say their role, gatewayRoleMetric), the active gateway alone,
// whose node is gateway. problem says why there is not exactly one then.
func peerHolders(v controllers, remote string) (holders []running, gateway, problem string) {
	var active []running
	gateways := false
	for _, a := range v.readable() {
		for _, s := range a.metrics.Where(gatewayRoleMetric, "remote", remote) {
			gateways = true
			if s.Labels["role"] == "active" && s.Value == 1 {
				active = append(active, a)
			}
		}
	}
	switch {
	case !gateways:
		return v.readable(), "", ""
	case len(active) == 0:
		return nil, "", fmt.Sprintf("this cluster reaches remote %s through gateways, but no agent is the active gateway: no pod reaches that remote (%s{remote=%q})", remote, gatewayRoleMetric, remote)
	case len(active) > 1:
		var nodes []string
		for _, a := range active {
			nodes = append(nodes, a.pod.Spec.NodeName)
		}
		return nil, "", fmt.Sprintf("this cluster reaches remote %s through gateways, and %d agents say they are the active gateway: %s", remote, len(active), strings.Join(nodes, ", "))
	}
	return active, active[0].pod.Spec.NodeName, ""
}

// agentPeers are the peers of remote an agent has: a handshake series for each.
func agentPeers(m scrape, remote string) map[string]bool {
	out := map[string]bool{}
	for _, s := range m.Where(agents.HandshakeMetric, "remote", remote) {
		out[s.Labels["peer"]] = true
	}
	for _, s := range m.Where(peerInfoMetric, "remote", remote) {
		out[s.Labels["peer"]] = true
	}
	return out
}

// union are the keys of the sets, sorted.
func union(sets map[string]map[string]bool) []string {
	var out []string
	for _, set := range sets {
		for k := range set {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// skippedReasons describes the nodes of remote an agent skipped, by reason: "not_annotated 2".
func skippedReasons(m scrape, remote string) string {
	var parts []string
	for _, s := range m.Where(skippedPeersMetric, "remote", remote) {
		if s.Value > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s.Labels["reason"], int(s.Value)))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// checkHandshakes checks that every peer of remote handshook within MaxHandshakeAge, and for one
// that did not, says which side cannot reach which: a peer that publishes an endpoint is the one
// this node sends to, one that publishes none must open the tunnel itself.
func (k *checker) checkHandshakes(v controllers, remote string, res Result) Result {
	now, maxAge := k.opts.Now(), k.opts.MaxHandshakeAge
	port := listenPort(v.c, remote)
	var problems, older []string
	peers := 0
	for _, a := range v.readable() {
		node := a.pod.Spec.NodeName
		published := endpointsPublished(a.metrics, remote)
		if published == nil {
			older = append(older, v.where(a))
		}
		before := len(problems)
		for _, s := range a.metrics.Where(agents.HandshakeMetric, "remote", remote) {
			peers++
			peer, at := s.Labels["peer"], promtext.Time(s.Value)
			if why := agents.Stale(at, now, maxAge); why != "" {
				stale := stalePeer{node: node, peer: peer, remote: remote, why: why, never: at.IsZero()}
				problems = append(problems, stale.problem(published[peer], port))
			}
		}
		if n, _ := a.metrics.Value(peersWithoutHandshakeMetric, "remote", remote); n > 0 && len(problems) == before {
			problems = append(problems, fmt.Sprintf("node %s counts %d peers of remote %s without a handshake (%s)", node, int(n), remote, peersWithoutHandshakeMetric))
		}
	}
	switch {
	case len(problems) > 0:
		return fail(res, "check-handshakes", "%d peers of remote %s have no handshake in the last %s: %s", len(problems), remote, maxAge, most(problems, 5))
	case len(older) > 0:
		return warnRunbook(res, "check-handshakes", "%d peers of remote %s handshook in the last %s; %s export no %s (a version before it): a failing handshake could not say which side cannot reach which",
			peers, remote, maxAge, most(older, 5), peerInfoMetric)
	}
	return pass(res, "%d peers of remote %s handshook in the last %s", peers, remote, maxAge)
}

// endpointsPublished is, by peer of remote, whether the peer publishes an endpoint ("true" or
// "false"); nil when the agent does not say (a version before semaphore_wg_peer_info).
func endpointsPublished(m scrape, remote string) map[string]string {
	if !m.Has(peerInfoMetric) {
		return nil
	}
	out := map[string]string{}
	for _, s := range m.Where(peerInfoMetric, "remote", remote) {
		out[s.Labels["peer"]] = s.Labels["endpoint_published"]
	}
	return out
}

// stalePeer is a peer of remote with which node has had no recent handshake (why; never when
// not even one).
type stalePeer struct {
	node, peer, remote, why string
	never                   bool
}

// problem says which side cannot reach which, as far as published tells ("true", "false", or ""
// when not known); port is the node's UDP port for the remote (0 when not known).
func (s stalePeer) problem(published string, port int) string {
	what := fmt.Sprintf("node %s has never completed a handshake with %s", s.node, s.peer)
	if !s.never {
		what = fmt.Sprintf("node %s has no recent handshake with %s (%s)", s.node, s.peer, s.why)
	}
	toNode := s.node
	if port > 0 {
		toNode = fmt.Sprintf("%s's UDP port %d", s.node, port)
	}
	switch published {
	case "true":
		return fmt.Sprintf("%s (endpoint published: the %s node's endpoint is unreachable from %s, or its firewall drops UDP to the port it publishes)", what, s.remote, s.node)
	case "false":
		return fmt.Sprintf("%s: %s publishes no endpoint, so it must open the tunnel itself; check its keepalive and outbound UDP to %s", what, s.peer, toNode)
	}
	return fmt.Sprintf("node %s: peer %s %s", s.node, s.peer, s.why)
}

// listenPort is the component's UDP port for remote (SEMAPHORE_WG_LISTEN_PORTS), 0 when not
// known.
func listenPort(c release.Component, remote string) int {
	for _, item := range remotepairs.Split(c.Env["SEMAPHORE_WG_LISTEN_PORTS"]) {
		if item.Remote == remote {
			if n, err := strconv.Atoi(item.Value); err == nil {
				return n
			}
		}
	}
	return 0
}
