package testbed

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestProxyLatency sends a message through the proxy to an echo server over loopback and
// back, on one connection opened before the latency is set: the round trip takes at least
// twice the latency (once each way) while it is set, and is fast again once it is 0.
func TestProxyLatency(t *testing.T) {
	conn, p := dialEcho(t)
	if rtt := roundTrip(t, conn); rtt > 100*time.Millisecond {
		t.Fatalf("round trip without latency took %v", rtt)
	}
	const latency = 150 * time.Millisecond
	p.SetLatency(latency)
	if rtt := roundTrip(t, conn); rtt < 2*latency {
		t.Fatalf("round trip with %v latency each way took %v, want at least %v", latency, rtt, 2*latency)
	}
	p.SetLatency(0)
	// Every delayed chunk has been written by now, so the next ones go straight through.
	if rtt := roundTrip(t, conn); rtt > 100*time.Millisecond {
		t.Fatalf("round trip after removing the latency took %v", rtt)
	}
}

// dialEcho starts an echo server and a proxy in front of it on loopback, and connects to the
// proxy; all are closed when the test ends.
func dialEcho(t *testing.T) (net.Conn, *proxy) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := forward(ln, echo.Addr().String(), net.Dial)
	t.Cleanup(p.Close)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, p
}

// roundTrip writes a message to c and reads the echo back, returning how long that took.
func roundTrip(t *testing.T, c net.Conn) time.Duration {
	t.Helper()
	msg := []byte("ping")
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(msg) {
		t.Fatalf("echo %q, want %q", got, msg)
	}
	return time.Since(start)
}
