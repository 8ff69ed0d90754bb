//go:build linux

package testbed

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// Ping sends one ICMP echo request from src to dst inside the named network namespace and
// waits up to timeout for the reply, like `ping -c 1 -W timeout -I src dst` but without a ping
// binary. It returns the round-trip time. It needs CAP_NET_RAW (a raw ICMP socket).
func Ping(netns, src, dst string, timeout time.Duration) (time.Duration, error) {
	var c net.PacketConn
	if err := InNetns(netns, func() error {
		var err error
		c, err = net.ListenPacket("ip4:icmp", src)
		return err
	}); err != nil {
		return 0, fmt.Errorf("ping %s -> %s in %s: %w", src, dst, netns, err)
	}
	defer c.Close()
	// Every raw ICMP socket of the namespace sees every reply: a random id and sequence number
	// pick out ours, so pings may run concurrently.
	var idb [4]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return 0, err
	}
	id, seq := binary.BigEndian.Uint16(idb[:2]), binary.BigEndian.Uint16(idb[2:])
	msg, err := (&icmp.Message{
		Type: ipv4.ICMPTypeEcho,
		Body: &icmp.Echo{ID: int(id), Seq: int(seq), Data: []byte("semaphore-wireguard data path")},
	}).Marshal(nil)
	if err != nil {
		return 0, err
	}
	sent := time.Now()
	if _, err := c.WriteTo(msg, &net.IPAddr{IP: net.ParseIP(dst)}); err != nil {
		return 0, fmt.Errorf("ping %s -> %s in %s: %w", src, dst, netns, err)
	}
	if err := c.SetReadDeadline(sent.Add(timeout)); err != nil {
		return 0, err
	}
	buf := make([]byte, 1500)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return 0, fmt.Errorf("ping %s -> %s in %s: no reply: %w", src, dst, netns, err)
		}
		if from.String() != dst {
			continue
		}
		reply, err := icmp.ParseMessage(ipv4.ICMPTypeEchoReply.Protocol(), buf[:n])
		if err != nil || reply.Type != ipv4.ICMPTypeEchoReply {
			continue
		}
		if echo, ok := reply.Body.(*icmp.Echo); ok && echo.ID == int(id) && echo.Seq == int(seq) {
			return time.Since(sent), nil
		}
	}
}
