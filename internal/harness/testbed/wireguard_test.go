package testbed

import (
	"bufio"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// serveUAPI answers one UAPI "get" on a socket in a temporary directory with answer, as a
// userspace device does, and returns the socket's path.
func serveUAPI(t *testing.T, answer string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "wg0.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for line, err := r.ReadString('\n'); err == nil && line != "\n"; line, err = r.ReadString('\n') {
		}
		_, _ = io.WriteString(c, answer)
	}()
	return sock
}

func TestWireGuardPeersReadsEachPeerOfTheDevice(t *testing.T) {
	sock := serveUAPI(t, strings.Join([]string{
		"private_key=" + strings.Repeat("11", 32),
		"listen_port=51820",
		"public_key=" + strings.Repeat("00", 32),
		"endpoint=192.0.2.1:51820",
		"last_handshake_time_sec=1700000000",
		"last_handshake_time_nsec=5",
		"rx_bytes=124",
		"tx_bytes=180",
		"allowed_ip=10.1.1.128/26",
		"allowed_ip=10.1.1.70/32",
		"public_key=" + strings.Repeat("ff", 32),
		"last_handshake_time_sec=0",
		"last_handshake_time_nsec=0",
		"errno=0",
		"", "",
	}, "\n"))
	peers, err := WireGuardPeers(sock)
	if err != nil {
		t.Fatal(err)
	}
	if len(peers) != 2 {
		t.Fatalf("got %d peers, want 2: %v", len(peers), peers)
	}
	p := peers[0]
	if p.PublicKey != "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" || p.Endpoint != "192.0.2.1:51820" ||
		!p.LastHandshake.Equal(time.Unix(1700000000, 5)) || p.RxBytes != 124 || p.TxBytes != 180 ||
		!slices.Equal(p.AllowedIPs, []string{"10.1.1.70/32", "10.1.1.128/26"}) {
		t.Errorf("first peer: %+v", p)
	}
	if q := peers[1]; q.Endpoint != "" || !q.LastHandshake.IsZero() || len(q.AllowedIPs) != 0 {
		t.Errorf("second peer, without endpoint, handshake or allowed IPs: %+v", q)
	}
}

func TestWireGuardPeersRefusesWhatNoDeviceSays(t *testing.T) {
	for name, answer := range map[string]string{
		"an error":                     "errno=1\n\n",
		"an allowed IP before a peer":  "listen_port=1\nallowed_ip=10.0.0.0/8\nerrno=0\n\n",
		"an allowed IP that is no IP":  "public_key=" + strings.Repeat("00", 32) + "\nallowed_ip=ten\nerrno=0\n\n",
		"an answer without its ending": "listen_port=1\n",
	} {
		t.Run(name, func(t *testing.T) {
			if peers, err := WireGuardPeers(serveUAPI(t, answer)); err == nil {
				t.Errorf("no error, peers %v", peers)
			}
		})
	}
}
