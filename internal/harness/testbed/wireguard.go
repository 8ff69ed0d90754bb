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
	"strings"
	"time"
)

// WireGuardAllowedIPs asks a userspace WireGuard device for its peers through its UAPI socket
// (socket: <root>/var/run/wireguard/<device>.sock, root being the device process's root) and
// returns the allowed IPs of each peer, by base64 public key, sorted by address. wgctrl cannot do
// this: it only looks for sockets in this process's /var/run/wireguard.
func WireGuardAllowedIPs(socket string) (map[string][]string, error) {
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
	out := map[string][]string{}
	peer := ""
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "": // the blank line that ends the answer
			for _, ips := range out {
				slices.SortFunc(ips, func(a, b string) int {
					pa, pb := netip.MustParsePrefix(a), netip.MustParsePrefix(b)
					if c := pa.Addr().Compare(pb.Addr()); c != 0 {
						return c
					}
					return pa.Bits() - pb.Bits()
				})
			}
			return out, nil
		case "errno":
			if v != "0" {
				return nil, fmt.Errorf("%s: UAPI get: errno %s", socket, v)
			}
		case "public_key":
			b, err := hex.DecodeString(v)
			if err != nil {
				return nil, fmt.Errorf("%s: public key %q: %w", socket, v, err)
			}
			peer = base64.StdEncoding.EncodeToString(b)
			out[peer] = []string{}
		case "allowed_ip":
			if _, err := netip.ParsePrefix(v); err != nil {
				return nil, fmt.Errorf("%s: allowed IP %q: %w", socket, v, err)
			}
			if peer == "" {
				return nil, fmt.Errorf("%s: allowed IP %q before any peer", socket, v)
			}
			out[peer] = append(out[peer], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: UAPI get: %w", socket, err)
	}
	return nil, fmt.Errorf("%s: UAPI get: the answer ended early", socket)
}
