package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// httpCheck is the health check: GET http://target:port/path answered 200 within timeout.
func httpCheck(port int, timeout time.Duration) func(ctx context.Context, target netip.Addr, path string) error {
	client := &http.Client{Timeout: timeout}
	return func(ctx context.Context, target netip.Addr, path string) error {
		url := "http://" + net.JoinHostPort(target.String(), fmt.Sprint(port)) + path
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%d", resp.StatusCode)
		}
		return nil
	}
}

// kernelRules are the rules of the network namespace the program runs in.
type kernelRules struct{}

// set replaces the chain's rules with one DNAT rule per forwarded port, in one
// iptables-restore (the chain is never half written).
func (kernelRules) set(address netip.Addr, to map[uint16]netip.Addr) error {
	cmd := exec.Command("iptables-restore", "-w", "--noflush")
	cmd.Stdin = strings.NewReader(dnatRules(address, to))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables-restore: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// dnatRules is the iptables-restore input of the chain: declared (which flushes it), then a
// rule per port in port order.
func dnatRules(address netip.Addr, to map[uint16]netip.Addr) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*nat\n:%s - [0:0]\n", chain)
	for _, port := range slices.Sorted(maps.Keys(to)) {
		fmt.Fprintf(&b, "-A %s -d %s -p udp --dport %d -j DNAT --to-destination %s\n",
			chain, address, port, netip.AddrPortFrom(to[port], port))
	}
	b.WriteString("COMMIT\n")
	return b.String()
}

// forget deletes the tracked UDP flows to address:port.
func (kernelRules) forget(address netip.Addr, port uint16) error {
	f := &netlink.ConntrackFilter{}
	if err := f.AddIP(netlink.ConntrackOrigDstIP, address.AsSlice()); err != nil {
		return err
	}
	if err := f.AddProtocol(unix.IPPROTO_UDP); err != nil {
		return err
	}
	if err := f.AddPort(netlink.ConntrackOrigDstPort, port); err != nil {
		return err
	}
	_, err := netlink.ConntrackDeleteFilters(netlink.ConntrackTable, unix.AF_INET, f)
	return err
}
