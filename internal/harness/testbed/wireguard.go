package testbed

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WireGuardPeer is what a userspace WireGuard device says of one of its peers.
type WireGuardPeer struct {
	PublicKey     string // base64
	Endpoint      string // empty when the device has none
	LastHandshake time.Time
	RxBytes       int64
	TxBytes       int64
	AllowedIPs    []string // sorted by address, then prefix length
}

// String is the peer on one line, for a failing test's log.
func (p WireGuardPeer) String() string {
	hs := "never"
	if !p.LastHandshake.IsZero() {
		hs = time.Since(p.LastHandshake).Round(time.Millisecond).String() + " ago"
	}
	return fmt.Sprintf("peer %s endpoint %q handshake %s rx %d B tx %d B allowed IPs %q", p.PublicKey, p.Endpoint, hs, p.RxBytes, p.TxBytes, p.AllowedIPs)
}

// WireGuardPeers asks a userspace WireGuard device for its peers through its UAPI socket
// (socket: <root>/var/run/wireguard/<device>.sock, root being the device process's root). wgctrl
// cannot do this: it only looks for sockets in this process's /var/run/wireguard.
func WireGuardPeers(socket string) ([]WireGuardPeer, error) {
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c, "get=1\n\n"); err != nil {
		return nil, err
	}
	var out []WireGuardPeer
	var handshake [2]int64 // seconds, nanoseconds of the current peer's last handshake
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		if k == "" { // the blank line that ends the answer
			for i := range out {
				sortPrefixes(out[i].AllowedIPs)
			}
			return out, nil
		}
		if k == "public_key" {
			b, err := hex.DecodeString(v)
			if err != nil {
				return nil, fmt.Errorf("%s: public key %q: %w", socket, v, err)
			}
			out = append(out, WireGuardPeer{PublicKey: base64.StdEncoding.EncodeToString(b), AllowedIPs: []string{}})
			handshake = [2]int64{}
			continue
		}
		if k == "errno" && v != "0" {
			return nil, fmt.Errorf("%s: UAPI get: errno %s", socket, v)
		}
		if len(out) == 0 {
			if k == "allowed_ip" {
				return nil, fmt.Errorf("%s: allowed IP %q before any peer", socket, v)
			}
			continue // the device's own keys: before any peer
		}
		if err := setPeerField(&out[len(out)-1], &handshake, k, v); err != nil {
			return nil, fmt.Errorf("%s: %w", socket, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: UAPI get: %w", socket, err)
	}
	return nil, fmt.Errorf("%s: UAPI get: the answer ended early", socket)
}

// setPeerField sets the field of p that the UAPI line key=value gives; handshake collects the
// two halves of the last handshake time.
func setPeerField(p *WireGuardPeer, handshake *[2]int64, key, value string) error {
	switch key {
	case "endpoint":
		p.Endpoint = value
	case "allowed_ip":
		if _, err := netip.ParsePrefix(value); err != nil {
			return fmt.Errorf("allowed IP %q: %w", value, err)
		}
		p.AllowedIPs = append(p.AllowedIPs, value)
	case "rx_bytes", "tx_bytes", "last_handshake_time_sec", "last_handshake_time_nsec":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return fmt.Errorf("%s %q: %w", key, value, err)
		}
		switch key {
		case "rx_bytes":
			p.RxBytes = n
		case "tx_bytes":
			p.TxBytes = n
		case "last_handshake_time_sec":
			handshake[0] = n
		default:
			handshake[1] = n
		}
		if *handshake != [2]int64{} {
			p.LastHandshake = time.Unix(handshake[0], handshake[1])
		}
	}
	return nil
}

// WireGuardAllowedIPs is the allowed IPs of every peer of the userspace device behind socket
// (see WireGuardPeers), by base64 public key, sorted by address.
func WireGuardAllowedIPs(socket string) (map[string][]string, error) {
	peers, err := WireGuardPeers(socket)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(peers))
	for _, p := range peers {
		out[p.PublicKey] = p.AllowedIPs
	}
	return out, nil
}

func sortPrefixes(ips []string) {
	slices.SortFunc(ips, func(a, b string) int {
		pa, pb := netip.MustParsePrefix(a), netip.MustParsePrefix(b)
		if c := pa.Addr().Compare(pb.Addr()); c != 0 {
			return c
		}
		return pa.Bits() - pb.Bits()
	})
}
