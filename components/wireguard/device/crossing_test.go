package device

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.zx2c4.com/wireguard/conn"
	wgdevice "golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun/tuntest"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// TestCrossingHandshakesLeaveTrafficFlowingBothWays configures many pairs of userspace devices
// with each other at the same moment, as two agents do that learn of each other's node at once:
// both devices start a handshake (the persistent keepalive sends one as soon as the peer is
// set), the initiations cross, and each device's handshake workers handle the other's
// initiation and the answer to its own at the same time. Every pair must then carry traffic
// both ways within a few handshake retries. Upstream wireguard-go could file the session of
// such an answer under an index it had just dropped, so that one direction stayed dead until
// the next rekey, two minutes later; the copy the components link takes the handshake's lock
// across the check and the update (third_party/wireguard-go/README.semaphore.md). Pairs run
// six at a time: the load is what makes the workers overlap.
func TestCrossingHandshakesLeaveTrafficFlowingBothWays(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of handshakes over loopback: not a pure test")
	}
	const pairs = 240
	var g errgroup.Group
	g.SetLimit(6)
	var mu sync.Mutex
	var failed []string
	for i := range pairs {
		g.Go(func() error {
			if log, err := crossPair(); err != nil {
				mu.Lock()
				defer mu.Unlock()
				failed = append(failed, fmt.Sprintf("pair %d: %v\n%s", i, err, log))
			}
			return nil
		})
	}
	_ = g.Wait()
	if len(failed) > 0 {
		t.Errorf("%d of %d pairs configured at once did not carry traffic both ways within 20s; the first:\n%s", len(failed), pairs, failed[0])
	}
}

// crossPair sets up two devices on loopback, gives each the other as a peer at the same moment
// and pings across, both ways, until a ping and its answer get through or 20 s pass. It
// returns the devices' log when they do not.
func crossPair() (string, error) {
	log := &syncLog{}
	ends := [2]*crossEnd{}
	for i := range ends {
		e, err := newCrossEnd(log, i)
		if err != nil {
			return "", err
		}
		defer e.dev.Close()
		ends[i] = e
	}
	var set sync.WaitGroup
	for i, e := range ends {
		set.Go(func() { e.err = e.dev.IpcSet(e.peerConfig(ends[1-i])) })
	}
	set.Wait()
	for _, e := range ends {
		if e.err != nil {
			return "", e.err
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if ends[0].pings(ends[1]) && ends[1].pings(ends[0]) {
			return "", nil
		}
	}
	return log.String(), fmt.Errorf("no ping got through both ways")
}

// crossEnd is one device of a pair: its TUN is a pair of channels, its UDP socket is real.
type crossEnd struct {
	dev  *wgdevice.Device
	tun  *tuntest.ChannelTUN
	key  wgtypes.Key
	port int
	addr netip.Addr // the tunnel address it holds
	err  error
}

func newCrossEnd(log *syncLog, i int) (*crossEnd, error) {
	key, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		return nil, err
	}
	e := &crossEnd{tun: tuntest.NewChannelTUN(), key: key, addr: netip.AddrFrom4([4]byte{10, 99, 0, byte(i + 1)})}
	e.dev = wgdevice.NewDevice(e.tun.TUN(), conn.NewDefaultBind(), log.logger(fmt.Sprintf("dev%d: ", i)))
	if err := e.dev.IpcSet(fmt.Sprintf("private_key=%s\nlisten_port=0\n", hex.EncodeToString(key[:]))); err != nil {
		e.dev.Close()
		return nil, err
	}
	if err := e.dev.Up(); err != nil {
		e.dev.Close()
		return nil, err
	}
	if e.port, err = listenPort(e.dev); err != nil {
		e.dev.Close()
		return nil, err
	}
	return e, nil
}

// peerConfig makes other a peer of e, as the agent does: endpoint, keepalive, allowed IPs.
func (e *crossEnd) peerConfig(other *crossEnd) string {
	pub := other.key.PublicKey()
	return fmt.Sprintf("public_key=%s\nendpoint=127.0.0.1:%d\npersistent_keepalive_interval=1\nreplace_allowed_ips=true\nallowed_ip=%s/32\n",
		hex.EncodeToString(pub[:]), other.port, other.addr)
}

// pings sends one ping from e to other through the tunnel and reports whether it arrived
// within a second.
func (e *crossEnd) pings(other *crossEnd) bool {
	e.tun.Outbound <- tuntest.Ping(other.addr, e.addr)
	select {
	case <-other.tun.Inbound:
		return true
	case <-time.After(time.Second):
		return false
	}
}

func listenPort(dev *wgdevice.Device) (int, error) {
	state, err := dev.IpcGet()
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(state))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "listen_port="); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("no listen_port in the device's state")
}

// syncLog collects the verbose log of both devices of a pair, to show when the pair fails.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) logger(prefix string) *wgdevice.Logger {
	f := func(format string, args ...any) {
		l.mu.Lock()
		defer l.mu.Unlock()
		fmt.Fprintf(&l.b, "%s %s%s\n", time.Now().Format("15:04:05.000000"), prefix, fmt.Sprintf(format, args...))
	}
	return &wgdevice.Logger{Verbosef: f, Errorf: f}
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
