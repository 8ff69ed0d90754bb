// Package app assembles semaphore-wireguard from its configuration: keys, devices, clients,
// metrics, admin server and the controller.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kube-semaphore/semaphore/components/wireguard/controller"
	"github.com/kube-semaphore/semaphore/components/wireguard/device"
	"github.com/kube-semaphore/semaphore/components/wireguard/endpoint"
	"github.com/kube-semaphore/semaphore/components/wireguard/gateway"
	"github.com/kube-semaphore/semaphore/components/wireguard/mtu"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
	"github.com/kube-semaphore/semaphore/internal/addrguard"
	"github.com/kube-semaphore/semaphore/internal/config"
	"github.com/kube-semaphore/semaphore/internal/daemon"
	"github.com/kube-semaphore/semaphore/internal/metrics"
	"github.com/kube-semaphore/semaphore/internal/ownership"
)

// Name is the component's name: its user agent and log tag.
const Name = ownership.WireGuard

// MetricsPrefix starts the name of every metric of this component.
const MetricsPrefix = "semaphore_wg"

// Config is semaphore-wireguard's configuration, read from the environment. It runs on every
// node (a DaemonSet), so there is no leader election.
type Config struct {
	config.Shared
	config.RemoteRanges
	NodeName             string                `envconfig:"SEMAPHORE_WG_NODE_NAME" required:"true" desc:"name of the Node this instance runs on (from the downward API)"`
	KeyDir               string                `envconfig:"SEMAPHORE_WG_KEY_DIR" default:"/var/lib/semaphore-wireguard" desc:"host directory holding one private key per device (mode 0600), kept across restarts"`
	ListenPorts          map[string]int        `envconfig:"SEMAPHORE_WG_LISTEN_PORTS" desc:"UDP listen port of each remote's device, as remote:port pairs, e.g. aws:51821,merit:51822 (required for every remote)"`
	MTU                  mtu.Settings          `envconfig:"SEMAPHORE_WG_MTU" default:"auto" desc:"MTU of each remote's WireGuard device: auto (the underlay path MTU toward the remote's nodes, the smaller of this node's route and what they publish, less 60 bytes to IPv4 endpoints or 80 to IPv6 ones, at least 1280) or a number of 1280-9000; one value for every remote, or remote:value items with a bare value for the remotes not named, e.g. aws:1380,auto"`
	Mode                 device.Mode           `envconfig:"SEMAPHORE_WG_MODE" default:"auto" desc:"WireGuard implementation: auto (kernel when available), kernel or userspace"`
	Keepalive            time.Duration         `envconfig:"SEMAPHORE_WG_KEEPALIVE" default:"25s" desc:"persistent keepalive interval of every peer (0 disables)"`
	EndpointAddressTypes endpoint.Types        `envconfig:"SEMAPHORE_WG_ENDPOINT_ADDRESS_TYPES" default:"ExternalIP,InternalIP" desc:"Node address types (ExternalIP, InternalIP) this node publishes as its endpoint, in order of preference: the first address of the first type the Node lists; with none, it publishes no endpoint and the remote's nodes answer the handshakes it starts. One list for every remote, or remote:type items (a remote's list is its items in order), items without a remote being the list of the remotes not named, e.g. aws:InternalIP,ExternalIP,InternalIP. The Node's annotation wireguard.semaphore.uw.io/endpoint-address, an IP address, wins over it"`
	PodCIDRsFrom         controller.Sources    `envconfig:"SEMAPHORE_WG_POD_CIDRS_FROM" default:"node" desc:"where each remote node's pod addresses come from: node (its spec.podCIDRs) or calico-ipam (the remote's Calico IPAM blocks affine to it and the addresses it borrowed); one value for every remote or remote:source pairs, e.g. aws:calico-ipam,merit:node"`
	EndpointRanges       addrguard.Ranges      `envconfig:"SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES" desc:"ranges a remote node's WireGuard endpoint may lie in without being one of the Node's own addresses (InternalIP, ExternalIP), as remote:CIDR pairs, e.g. aws:203.0.113.0/24,aws:2001:db8::/64: for remotes whose nodes sit behind a NAT and publish its public address. Outside them a remote node whose endpoint is not one of its addresses is not a peer"`
	Topology             controller.Topologies `envconfig:"SEMAPHORE_WG_TOPOLOGY" default:"mesh" desc:"how this cluster reaches each remote: mesh (every node peers with the remote's nodes) or gateway (only this cluster's active gateway, elected among the nodes SEMAPHORE_WG_GATEWAY_NODES selects, peers with the remote; the other nodes hold no device for it and route its pods to the gateway over this cluster's network); one value for every remote, or remote:topology items with a bare value for the remotes not named, e.g. aws:gateway,mesh"`
	GatewayNodes         string                `envconfig:"SEMAPHORE_WG_GATEWAY_NODES" default:"wireguard.semaphore.uw.io/gateway=true" desc:"label selector of this cluster's gateway nodes, among which the active gateway toward each remote reached through gateways is elected (a Lease semaphore-wireguard-gateway-<remote> in POD_NAMESPACE)"`
	MaxPeers             int                   `envconfig:"SEMAPHORE_WG_MAX_PEERS_PER_REMOTE" default:"5000" desc:"most peers of one remote's device (at least 1): of a remote with more nodes that could be peers, the first by name are, and the rest are skipped and counted as peer_limit"`
}

// Validate checks the configuration; each error names its variable.
func (c *Config) Validate() error {
	if err := c.Shared.Validate(); err != nil {
		return err
	}
	if c.NodeName == "" {
		return errors.New("SEMAPHORE_WG_NODE_NAME: must not be empty")
	}
	if c.KeyDir == "" || !filepath.IsAbs(c.KeyDir) {
		return fmt.Errorf("SEMAPHORE_WG_KEY_DIR: %q must be an absolute path", c.KeyDir)
	}
	ports := map[int]string{}
	for _, r := range c.Remotes {
		p, ok := c.ListenPorts[r]
		if !ok {
			return fmt.Errorf("SEMAPHORE_WG_LISTEN_PORTS: no port for remote %q", r)
		}
		if p < 1 || p > 65535 {
			return fmt.Errorf("SEMAPHORE_WG_LISTEN_PORTS: port %d of %q is not 1-65535", p, r)
		}
		if other, dup := ports[p]; dup {
			return fmt.Errorf("SEMAPHORE_WG_LISTEN_PORTS: %q and %q share port %d", other, r, p)
		}
		ports[p] = r
	}
	for r := range c.ListenPorts {
		if !slices.Contains(c.Remotes, r) {
			return fmt.Errorf("SEMAPHORE_WG_LISTEN_PORTS: %q is not in SEMAPHORE_REMOTES", r)
		}
	}
	if err := c.RemoteRanges.Validate(c.Remotes); err != nil {
		return err
	}
	if err := peers.CheckDeviceNames(c.Remotes); err != nil {
		return fmt.Errorf("SEMAPHORE_REMOTES: %w", err)
	}
	if err := c.EndpointRanges.CheckRemotes(c.Remotes); err != nil {
		return fmt.Errorf("SEMAPHORE_WG_REMOTE_ENDPOINT_RANGES: %w", err)
	}
	if err := c.Topology.CheckRemotes(c.Remotes); err != nil {
		return fmt.Errorf("SEMAPHORE_WG_TOPOLOGY: %w", err)
	}
	if err := c.validateGateways(); err != nil {
		return err
	}
	if c.MaxPeers < 1 {
		return fmt.Errorf("SEMAPHORE_WG_MAX_PEERS_PER_REMOTE: %d is not at least 1", c.MaxPeers)
	}
	if err := c.PodCIDRsFrom.CheckRemotes(c.Remotes); err != nil {
		return fmt.Errorf("SEMAPHORE_WG_POD_CIDRS_FROM: %w", err)
	}
	if err := c.EndpointAddressTypes.CheckRemotes(c.Remotes); err != nil {
		return fmt.Errorf("SEMAPHORE_WG_ENDPOINT_ADDRESS_TYPES: %w", err)
	}
	if err := c.MTU.CheckRemotes(c.Remotes); err != nil {
		return fmt.Errorf("SEMAPHORE_WG_MTU: %w", err)
	}
	switch c.Mode {
	case device.ModeAuto, device.ModeKernel, device.ModeUserspace:
	default:
		return fmt.Errorf("SEMAPHORE_WG_MODE: %q is not auto, kernel or userspace", c.Mode)
	}
	if c.Keepalive < 0 {
		return errors.New("SEMAPHORE_WG_KEEPALIVE: must not be negative")
	}
	return nil
}

// throughGateways are the remotes this cluster reaches through gateways.
func (c *Config) throughGateways() []string {
	return slices.DeleteFunc(slices.Clone(c.Remotes), func(r string) bool { return c.Topology.For(r) != controller.TopologyGateway })
}

// gatewayNodes is SEMAPHORE_WG_GATEWAY_NODES as a selector.
func (c *Config) gatewayNodes() (labels.Selector, error) {
	sel, err := labels.Parse(c.GatewayNodes)
	if err != nil {
		return nil, fmt.Errorf("SEMAPHORE_WG_GATEWAY_NODES: %w", err)
	}
	return sel, nil
}

// validateGateways checks what reaching a remote through gateways needs: a selector that picks
// some nodes, not all, and a namespace for the Leases.
func (c *Config) validateGateways() error {
	sel, err := c.gatewayNodes()
	if err != nil {
		return err
	}
	if len(c.throughGateways()) == 0 {
		return nil
	}
	if sel.Empty() {
		return errors.New("SEMAPHORE_WG_GATEWAY_NODES: must select some nodes, not every node, when SEMAPHORE_WG_TOPOLOGY has a gateway")
	}
	if os.Getenv("POD_NAMESPACE") == "" {
		return errors.New("POD_NAMESPACE: required when SEMAPHORE_WG_TOPOLOGY has a gateway: the namespace of the gateways' Leases")
	}
	return nil
}

// MetricSpecs describes every metric the component exports (besides the standard go_* and
// process_* ones), for the generated metrics reference.
func MetricSpecs() []metrics.Spec {
	return daemon.MetricSpecs(MetricsPrefix, func(f *metrics.Factory) {
		controller.NewMetrics(f, nil)
		newReplacedMetric(f)
	})
}

// WireGuard is a configured semaphore-wireguard, ready to run.
type WireGuard struct {
	*daemon.Base
	cfg     Config
	devices *device.Manager
	ctrl    *controller.Peering
	stale   []string
	// release drops the node's lock, once takeOver holds it.
	release func()
	// replaced counts the original semaphore-wireguard's devices replaced by ours.
	replaced prometheus.Counter
	// elections are this node's parts in the elections of the gateway toward each remote
	// reached through gateways, when it is a gateway node; running once takeOver has the
	// devices, until electing stops them.
	elections map[string]*gateway.Election
	electing  sync.WaitGroup
}

// originalDevice is the name the original semaphore-wireguard gave its device for remote.
func originalDevice(remote string) string { return "wireguard." + remote }

func newReplacedMetric(f *metrics.Factory) prometheus.Counter {
	return f.Counter("original_devices_replaced_total", "WireGuard devices of the original semaphore-wireguard (wireguard.<remote>) deleted to make way for ours (SEMAPHORE_ADOPT_ORIGINAL).")
}

// replaceOriginals deletes the original semaphore-wireguard's device of each of our remotes
// (its routes go with it), just before ours are set up: they may listen on the same port and
// route the same pod addresses. Its key file goes too: our device holds that key now.
func (a *WireGuard) replaceOriginals() error {
	if !a.cfg.AdoptOriginal {
		return nil
	}
	existing, err := a.devices.Devices("wireguard.")
	if err != nil {
		return err
	}
	for _, r := range a.cfg.Remotes {
		name := originalDevice(r)
		if !slices.Contains(existing, name) {
			continue
		}
		if err := a.devices.Delete(name); err != nil {
			return fmt.Errorf("replacing the original semaphore-wireguard's device %s: %w", name, err)
		}
		_ = os.Remove(device.KeyFile(a.cfg.KeyDir, name))
		a.replaced.Inc()
		a.Log.Info("deleted the original semaphore-wireguard's device; ours replaces it", "device", name, "remote", r)
	}
	return nil
}

// New loads or creates the keys, opens the device manager and builds the controller. cfg must
// have been validated.
func New(cfg Config, log *slog.Logger) (*WireGuard, error) {
	base, err := daemon.New(Name, MetricsPrefix, cfg.Shared, config.LeaderElection{}, log)
	if err != nil {
		return nil, err
	}
	var devs []controller.RemoteDevice
	for _, r := range cfg.Remotes {
		name := peers.DeviceName(r)
		if cfg.AdoptOriginal {
			imported, err := device.ImportKey(cfg.KeyDir, originalDevice(r), name)
			if err != nil {
				return nil, fmt.Errorf("SEMAPHORE_WG_KEY_DIR: the original semaphore-wireguard's key: %w", err)
			}
			if imported {
				log.Info("reusing the original semaphore-wireguard's private key: the node's public key does not change", "device", name, "remote", r)
			}
		}
		key, created, err := device.LoadOrCreateKey(cfg.KeyDir, name)
		if err != nil {
			return nil, fmt.Errorf("SEMAPHORE_WG_KEY_DIR: %w", err)
		}
		if created {
			log.Info("generated a private key", "device", name, "remote", r)
		}
		devs = append(devs, controller.RemoteDevice{Remote: r, Device: name, Key: key, ListenPort: cfg.ListenPorts[r]})
	}
	mgr, err := device.NewManager(cfg.Mode, log)
	if err != nil {
		return nil, fmt.Errorf("SEMAPHORE_WG_MODE: %w", err)
	}
	mgr.SetStateDir(cfg.KeyDir) // a userspace device's peers outlive a restart, as its key does
	a := &WireGuard{Base: base, cfg: cfg, devices: mgr, replaced: newReplacedMetric(base.Factory)}
	a.stale, err = a.staleDevices(devs)
	if err != nil {
		return nil, err
	}
	guard, err := base.Guard(cfg.RemotePodRanges)
	if err != nil {
		return nil, err
	}
	gatewayNodes, err := cfg.gatewayNodes()
	if err != nil {
		return nil, err
	}
	if a.elections, err = a.gatewayElections(base, gatewayNodes); err != nil {
		return nil, err
	}
	if remotes := cfg.throughGateways(); len(remotes) > 0 {
		base.HandleAdmin(gateway.HealthPattern, gateway.Health(remotes, a.elections))
	}
	asElections := map[string]controller.Election{}
	for remote, e := range a.elections {
		asElections[remote] = e
	}
	a.ctrl, err = controller.New(controller.Options{
		LocalCluster:         cfg.LocalCluster,
		NodeName:             cfg.NodeName,
		EndpointAddressTypes: cfg.EndpointAddressTypes,
		MTU:                  cfg.MTU,
		Keepalive:            cfg.Keepalive,
		ResyncPeriod:         cfg.ResyncPeriod,
		PodCIDRsFrom:         cfg.PodCIDRsFrom,
		Guard:                guard,
		EndpointRanges:       cfg.EndpointRanges,
		MaxPeersPerRemote:    cfg.MaxPeers,
		Topology:             cfg.Topology,
		Gateways:             asElections,
		GatewayNodes:         gatewayNodes,
	}, base.Local, base.Remotes, devs, mgr, base.Health, controller.NewMetrics(base.Factory, base.Registry), base.Queue, log)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// gatewayElections are this node's parts in the elections of the gateway toward each remote
// reached through gateways, when its Node is one of the gateway nodes; none otherwise.
func (a *WireGuard) gatewayElections(base *daemon.Base, gatewayNodes labels.Selector) (map[string]*gateway.Election, error) {
	remotes := a.cfg.throughGateways()
	if len(remotes) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := base.Local.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("SEMAPHORE_WG_NODE_NAME: node %s: %w", a.cfg.NodeName, err)
	}
	if !gatewayNodes.Matches(labels.Set(node.Labels)) {
		a.Log.Info("this node is no gateway node: it routes the pods of the remotes reached through gateways to its cluster's active gateway",
			"remotes", remotes, "gateway_nodes", gatewayNodes.String())
		return nil, nil
	}
	out := map[string]*gateway.Election{}
	for _, r := range remotes {
		out[r] = gateway.NewElection(base.Local, os.Getenv("POD_NAMESPACE"), r, a.cfg.NodeName, gateway.DefaultTiming, a.Log,
			func() { a.ctrl.ElectionChanged(r) })
	}
	a.Log.Info("this node is a gateway node: it stands for the gateway toward the remotes reached through gateways", "remotes", remotes)
	return out, nil
}

// startElections has this node stand in the elections of the gateways until ctx is done.
func (a *WireGuard) startElections(ctx context.Context) {
	for _, e := range a.elections {
		a.electing.Go(func() { e.Run(ctx) })
	}
}

// staleDevices are devices this component created (ours: a key file of that name is in the
// key directory) for remotes that are no longer configured.
func (a *WireGuard) staleDevices(devs []controller.RemoteDevice) ([]string, error) {
	existing, err := a.devices.Devices(peers.DevicePrefix)
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, name := range existing {
		if slices.ContainsFunc(devs, func(d controller.RemoteDevice) bool { return d.Device == name }) {
			continue
		}
		if _, err := os.Stat(device.KeyFile(a.cfg.KeyDir, name)); err == nil {
			stale = append(stale, name)
		}
	}
	return stale, nil
}

// Starting are the attributes of the line logged when the component starts.
func (a *WireGuard) Starting() []any {
	return []any{"cluster", a.cfg.LocalCluster, "remotes", a.cfg.Remotes, "node", a.cfg.NodeName, "mode", string(a.cfg.Mode), "admin", a.AdminAddr()}
}

// Run runs the controller until ctx is done, once takeOver has the node's devices. Devices stay
// when it stops (kernel ones, and userspace ones' links and routes), so traffic keeps flowing
// through a restart; it lets go of them only after closing its own, so the next agent finds
// the peers handed over.
func (a *WireGuard) Run(ctx context.Context) error {
	defer a.letGo()
	return a.RunControllerAfter(ctx, a.takeOver, a.ctrl, 1)
}

// busyPoll is how often takeOver tries a device another process still serves.
const busyPoll = 50 * time.Millisecond

// takeOver waits until no other agent works this node's devices (device.Hold: one that is
// stopping, replaced by this one in a rollout), then removes the devices of remotes no longer
// configured and sets up the devices and the node's annotations. An agent of a release without
// the lock is waited for too: while it runs it still serves its userspace devices
// (device.ErrBusy).
func (a *WireGuard) takeOver(ctx context.Context) error {
	release, err := device.Hold(ctx, a.cfg.KeyDir, func() {
		a.Log.Info("standing by: another semaphore-wireguard works this node's devices; taking them over when it stops")
	})
	if err != nil {
		return fmt.Errorf("SEMAPHORE_WG_KEY_DIR: %w", err)
	}
	a.release = release
	if err := a.removeStale(); err != nil {
		return err
	}
	if err := a.replaceOriginals(); err != nil {
		return err
	}
	for told := false; ; told = true {
		err := a.ctrl.Setup(ctx)
		if err == nil {
			// Only an agent that holds the devices may become a gateway.
			a.startElections(ctx)
		}
		if !errors.Is(err, device.ErrBusy) {
			return err
		}
		if !told {
			a.Log.Info("standing by: a previous semaphore-wireguard still serves the devices; taking them over when it stops", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(busyPoll):
		}
	}
}

// letGo closes the devices (a userspace device's process side; the links stay) and then drops
// the node's lock, so that the next agent finds what Close handed over.
func (a *WireGuard) letGo() {
	// A gateway releases its Leases first: a standby takes over while this one still carries
	// the traffic.
	a.electing.Wait()
	_ = a.devices.Close()
	if a.release != nil {
		a.release()
	}
}

// removeStale deletes the devices of remotes no longer configured, with their key files.
func (a *WireGuard) removeStale() error {
	for _, name := range a.stale {
		if err := a.devices.Delete(name); err != nil {
			return fmt.Errorf("removing device %s of a remote no longer configured: %w", name, err)
		}
		_ = os.Remove(device.KeyFile(a.cfg.KeyDir, name))
		a.Log.Info("removed the device of a remote no longer configured", "device", name)
	}
	return nil
}
