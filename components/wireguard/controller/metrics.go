package controller

import (
	"log/slog"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/components/wireguard/calicoipam"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/reconcile"
)

// Metrics are semaphore-wireguard's own metrics.
type Metrics struct {
	reconcile *reconcile.Metrics
	changes   *prometheus.CounterVec
	skipped   *prometheus.GaugeVec
	// skippedBlocks only has series for remotes read with calico-ipam (initBlocks).
	skippedBlocks *prometheus.GaugeVec
	deviceInfo    *prometheus.GaugeVec
	deviceMTU     *prometheus.GaugeVec
	pathMTU       *prometheus.GaugeVec
	badPathMTUs   *prometheus.GaugeVec
	badOverride   prometheus.Gauge
	// gatewayRole and gatewayChanges only have series for remotes reached through gateways
	// (initGateway).
	gatewayRole    *prometheus.GaugeVec
	gatewayChanges *prometheus.CounterVec
	stats          *statsCollector
}

// NewMetrics creates the metrics on f; the per-peer statistics are read from the devices at
// scrape time by a collector registered on reg.
func NewMetrics(f *metrics.Factory, reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reconcile: reconcile.NewMetrics(f, "one remote's device"),
		changes: f.CounterVec("device_changes_total",
			"Changes made to a device, by remote and operation: peer_add, peer_update, peer_remove, peer_retry (a new peer toward or as a gateway created afresh, its first handshake unanswered), route_add, route_remove.", "remote", "operation"),
		skipped: f.GaugeVec("skipped_peers",
			"Remote nodes not configured as peers, by remote and reason: not_annotated, bad_key, bad_endpoint, no_pod_cidr, bad_pod_cidr, duplicate_key, overlapping_pod_cidr; "+
				"for what the remote may not publish (docs/security.md), invalid_name (not a DNS subdomain), endpoint_not_node_address (not one of the node's addresses nor in SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES), duplicate_endpoint (every node publishing it) "+
				"and, for a pod CIDR, special_address, outside_remote_ranges, local_address, range_too_wide; peer_limit, nodes beyond SEMAPHORE_WG_MAX_PEERS_PER_REMOTE; "+
				"bad_gateway_term, a node saying it is its cluster's active gateway with a term that is not a number.", "remote", "reason"),
		skippedBlocks: f.GaugeVec("skipped_ipam_blocks",
			"IPAM blocks of a remote read with calico-ipam whose range is not routed, by remote and reason: no_affinity (its allocated addresses still are), bad_cidr, overlapping_block (a conflict: the older block is kept), overlaps_local.", "remote", "reason"),
		deviceInfo: f.GaugeVec("device_info",
			"The device of each remote (1), by remote, device name and WireGuard implementation: kernel or userspace.", "remote", "device", "implementation"),
		deviceMTU: f.GaugeVec("device_mtu",
			"MTU of the device of each remote, in bytes: SEMAPHORE_WG_MTU's number, or (auto) the path MTU less WireGuard's overhead (60 bytes to IPv4 endpoints, 80 to IPv6 ones), at least 1280.", "remote"),
		pathMTU: f.GaugeVec("path_mtu",
			"Underlay path MTU toward each remote's nodes, in bytes: the smaller of this node's route toward their endpoints and the smallest they publish (path-mtu annotation); 0 when unknown.", "remote"),
		badPathMTUs: f.GaugeVec("peers_with_invalid_path_mtu",
			"Peers of each remote whose published path MTU (path-mtu annotation) is ignored: not a number from 1280 to 65535.", "remote"),
		badOverride: f.Gauge("endpoint_override_invalid",
			"1 while this node's wireguard.semaphore.uw.io/endpoint-address annotation is set but not an address other nodes can send to: the endpoint comes from SEMAPHORE_WG_ENDPOINT_ADDRESS_TYPES instead."),
		gatewayRole: f.GaugeVec("gateway_role",
			"This node's role toward each remote reached through gateways (SEMAPHORE_WG_TOPOLOGY=gateway), 1 for the role it has: active (this cluster's gateway toward the remote), standby (a gateway node that is not the active one) or member (no gateway node).", "remote", "role"),
		gatewayChanges: f.CounterVec("gateway_changes_total",
			"Times this node saw its cluster's active gateway toward a remote reached through gateways change: another node elected, or none known any more.", "remote"),
		stats: &statsCollector{
			peers: prometheus.NewDesc(f.External("peers", "gauge",
				"Peers configured on the device of a remote, by device and remote.", "device", "remote"), "Peers configured on the device of a remote, by device and remote.", []string{"device", "remote"}, nil),
			handshake: prometheus.NewDesc(f.External("peer_last_handshake_timestamp_seconds", "gauge",
				"Unix time of the last handshake with a peer (0 before the first), by remote and peer node.", "remote", "peer"), "Unix time of the last handshake with a peer (0 before the first), by remote and peer node.", []string{"remote", "peer"}, nil),
			received: prometheus.NewDesc(f.External("peer_received_bytes_total", "counter",
				"Bytes received from a peer, by remote and peer node.", "remote", "peer"), "Bytes received from a peer, by remote and peer node.", []string{"remote", "peer"}, nil),
			sent: prometheus.NewDesc(f.External("peer_sent_bytes_total", "counter",
				"Bytes sent to a peer, by remote and peer node.", "remote", "peer"), "Bytes sent to a peer, by remote and peer node.", []string{"remote", "peer"}, nil),
			info:             externalDesc(f, "peer_info", peerInfoHelp, "remote", "peer", "endpoint_published"),
			withoutHandshake: externalDesc(f, "peers_without_handshake", withoutHandshakeHelp, "remote"),
		},
	}
	if reg != nil {
		reg.MustRegister(m.stats)
	}
	return m
}

const (
	peerInfoHelp = "Each peer of a remote's device (1), by remote, peer node and endpoint_published: true when the node publishes an endpoint this node sends to, " +
		"false when it publishes none (it cannot be reached: it must start the handshakes, and its endpoint is where they come from)."
	withoutHandshakeHelp = "Peers of each remote configured for longer than a grace period (2 minutes or 4 keepalive intervals, the larger) that never completed a handshake, " +
		"or whose last one is older than 180 seconds plus that grace: the two nodes do not reach each other."
)

// externalDesc is the description of a gauge the statistics collector exports, registered on f
// for the metrics reference.
func externalDesc(f *metrics.Factory, name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(f.External(name, "gauge", help, labels...), help, labels, nil)
}

// initBlocks reports zero skipped IPAM blocks of every reason for a remote read with
// calico-ipam, so that its series exist before the first skip.
func (m *Metrics) initBlocks(remote string) {
	for _, reason := range calicoipam.Reasons {
		m.skippedBlocks.WithLabelValues(remote, reason)
	}
}

// Roles of a node toward a remote reached through gateways, the role label of gateway_role.
const (
	RoleActive  = "active"
	RoleStandby = "standby"
	RoleMember  = "member"
)

// initGateway exports the gateway series of a remote reached through gateways at zero.
func (m *Metrics) initGateway(remote string) {
	for _, r := range []string{RoleActive, RoleStandby, RoleMember} {
		m.gatewayRole.WithLabelValues(remote, r)
	}
	m.gatewayChanges.WithLabelValues(remote)
}

// setGatewayRole makes role this node's one role toward remote.
func (m *Metrics) setGatewayRole(remote, role string) {
	for _, r := range []string{RoleActive, RoleStandby, RoleMember} {
		m.gatewayRole.WithLabelValues(remote, r).Set(metrics.Bool(r == role))
	}
}

// statsCollector reads peer statistics from the devices when Prometheus scrapes, so they are
// never stale and removed peers leave no series behind.
type statsCollector struct {
	peers, handshake, received, sent, info, withoutHandshake *prometheus.Desc
	source                                                   func() []deviceStats
	log                                                      *slog.Logger
}

// deviceStats are the statistics of one device.
type deviceStats struct {
	Device, Remote string
	Peers          []peerStats
	// WithoutHandshake counts the peers without a handshake (withoutHandshake).
	WithoutHandshake int
}

// peerStats are the statistics of one peer.
type peerStats struct {
	Node                string
	EndpointPublished   bool
	LastHandshakeUnix   float64
	ReceivedBytes, Sent int64
}

func (s *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.peers
	ch <- s.handshake
	ch <- s.received
	ch <- s.sent
	ch <- s.info
	ch <- s.withoutHandshake
}

func (s *statsCollector) Collect(ch chan<- prometheus.Metric) {
	if s.source == nil {
		return
	}
	for _, d := range s.source() {
		ch <- prometheus.MustNewConstMetric(s.peers, prometheus.GaugeValue, float64(len(d.Peers)), d.Device, d.Remote)
		ch <- prometheus.MustNewConstMetric(s.withoutHandshake, prometheus.GaugeValue, float64(d.WithoutHandshake), d.Remote)
		for _, p := range d.Peers {
			ch <- prometheus.MustNewConstMetric(s.info, prometheus.GaugeValue, 1, d.Remote, p.Node, strconv.FormatBool(p.EndpointPublished))
			ch <- prometheus.MustNewConstMetric(s.handshake, prometheus.GaugeValue, p.LastHandshakeUnix, d.Remote, p.Node)
			ch <- prometheus.MustNewConstMetric(s.received, prometheus.CounterValue, float64(p.ReceivedBytes), d.Remote, p.Node)
			ch <- prometheus.MustNewConstMetric(s.sent, prometheus.CounterValue, float64(p.Sent), d.Remote, p.Node)
		}
	}
}
