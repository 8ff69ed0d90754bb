package controller

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/kube-semaphore/semaphore/components/wireguard/mtu"
	"github.com/kube-semaphore/semaphore/components/wireguard/peers"
)

// pathRecheck is how often the own path MTU toward unchanged endpoints is read again: routes
// change, and learn smaller MTUs from ICMP.
const pathRecheck = time.Minute

// pathReading is the own path MTU toward a remote, as last read for its peers' endpoints.
type pathReading struct {
	endpoints []netip.Addr // sorted
	own       int
	at        time.Time
}

// startMTU is the MTU a remote's device is set up with, before anything is known of its peers,
// and this node's own path MTU then: the route toward any destination (the default route)
// from local, this node's endpoint address (invalid when it has none). A device that exists
// keeps its MTU (auto) until the first sync knows better, so a restart does not change it.
func (c *Peering) startMTU(rc *remoteCache, local netip.Addr) (deviceMTU, own int) {
	own = c.defaultPath(local)
	deviceMTU = mtu.Device(own, local.Is6())
	if set := c.opts.MTU.For(rc.dev.Remote); !set.Auto() {
		deviceMTU = set.Fixed
	} else if current, err := c.devices.MTU(rc.dev.Device); err == nil {
		deviceMTU = current
	}
	c.metrics.pathMTU.WithLabelValues(rc.dev.Remote).Set(float64(own))
	c.metrics.deviceMTU.WithLabelValues(rc.dev.Remote).Set(float64(deviceMTU))
	return deviceMTU, own
}

// defaultPath is the MTU of this node's default route (from local's family), 0 when unknown.
func (c *Peering) defaultPath(local netip.Addr) int {
	path, err := c.devices.DefaultPathMTU(local)
	if err != nil {
		c.log.Debug("no default route to read a path MTU from", "err", err)
		return 0
	}
	return path
}

// syncMTU sets the MTU of the remote's device (auto: from the path MTU toward its peers, at
// endpoints) and returns this node's own path MTU toward them, which it publishes.
func (c *Peering) syncMTU(rc *remoteCache, desired []peers.Peer, endpoints map[wgtypes.Key]*net.UDPAddr, local netip.Addr, now time.Time) (int, error) {
	addrs := endpointAddrs(desired, endpoints)
	own := c.ownPath(rc, addrs, local, now)
	path := mtu.Path(own, c.publishedPaths(rc, desired))
	ipv6 := slices.ContainsFunc(addrs, func(a netip.Addr) bool { return a.Is6() }) || (len(addrs) == 0 && local.Is6())
	deviceMTU := mtu.Device(path, ipv6)
	if set := c.opts.MTU.For(rc.dev.Remote); !set.Auto() {
		deviceMTU = set.Fixed
	}
	c.metrics.pathMTU.WithLabelValues(rc.dev.Remote).Set(float64(path))
	c.metrics.deviceMTU.WithLabelValues(rc.dev.Remote).Set(float64(deviceMTU))
	if err := c.devices.SetMTU(rc.dev.Device, deviceMTU); err != nil {
		return own, fmt.Errorf("MTU of %s: %w", rc.dev.Device, err)
	}
	return own, nil
}

// ownPath is this node's path MTU toward addrs, the peers' endpoints: the smallest of the
// routes toward them, or the default route's before any is known. It is read again when the
// endpoints change and every pathRecheck.
func (c *Peering) ownPath(rc *remoteCache, addrs []netip.Addr, local netip.Addr, now time.Time) int {
	last := rc.path
	if slices.Equal(last.endpoints, addrs) && now.Sub(last.at) < pathRecheck && !last.at.IsZero() {
		return last.own
	}
	own := 0
	for _, a := range addrs {
		p, err := c.devices.PathMTU(a)
		if err != nil {
			c.log.Debug("no route to a peer's endpoint to read a path MTU from", "remote", rc.dev.Remote, "endpoint", a, "err", err)
			continue
		}
		if own == 0 || p < own {
			own = p
		}
	}
	if own == 0 {
		own = c.defaultPath(local)
	}
	rc.path = pathReading{endpoints: addrs, own: own, at: now}
	return own
}

// publishedPaths are the path MTUs the remote's peers publish. Unusable ones are ignored,
// counted and their number logged when it changes.
func (c *Peering) publishedPaths(rc *remoteCache, desired []peers.Peer) []int {
	var out []int
	bad, example := 0, ""
	for _, p := range desired {
		if p.PublishedPathMTU == "" {
			continue
		}
		n, err := mtu.ParsePublished(p.PublishedPathMTU)
		if err != nil {
			bad, example = bad+1, p.Node+": "+err.Error()
			continue
		}
		out = append(out, n)
	}
	c.metrics.badPathMTUs.WithLabelValues(rc.dev.Remote).Set(float64(bad))
	rc.mu.Lock()
	changed := rc.badPathMTUs != bad
	rc.badPathMTUs = bad
	rc.mu.Unlock()
	if changed && bad > 0 {
		c.log.Warn("remote nodes publish a path MTU that is not a number from 1280 to 65535: ignored", "remote", rc.dev.Remote,
			"annotation", peers.PathMTUAnnotation(c.opts.LocalCluster), "nodes", bad, "example", example)
	}
	return out
}

// endpointAddrs are the distinct addresses of the endpoints of the desired peers, sorted.
func endpointAddrs(desired []peers.Peer, endpoints map[wgtypes.Key]*net.UDPAddr) []netip.Addr {
	var out []netip.Addr
	for _, p := range desired {
		if e := endpoints[p.PublicKey]; e != nil {
			out = append(out, e.AddrPort().Addr().Unmap())
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// endpointsAfter are the endpoints of the device's peers once changes are applied.
func endpointsAfter(actual []wgtypes.Peer, changes []wgtypes.PeerConfig) map[wgtypes.Key]*net.UDPAddr {
	out := make(map[wgtypes.Key]*net.UDPAddr, len(actual))
	for _, a := range actual {
		out[a.PublicKey] = a.Endpoint
	}
	for _, ch := range changes {
		switch {
		case ch.Remove:
			delete(out, ch.PublicKey)
		case ch.Endpoint != nil:
			out[ch.PublicKey] = ch.Endpoint
		}
	}
	return out
}
