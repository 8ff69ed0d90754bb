package testbed

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// proxy forwards TCP connections to an API server and can be cut to simulate an outage, or
// slowed to simulate a distant or congested one.
type proxy struct {
	addr    string
	backend string
	// dial connects to backend: a plain net.Dial, or a dial from another network namespace.
	dial func(network, addr string) (net.Conn, error)
	// latency (nanoseconds) delays every chunk forwarded, either way, on open connections too:
	// a controller's watches are long-lived and must feel it without reconnecting.
	latency atomic.Int64

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

func newProxy(backendURL string) (*proxy, error) {
	u, err := url.Parse(backendURL)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return forward(ln, u.Host, net.Dial), nil
}

// forward serves ln, forwarding every connection to backend (host:port) through dial.
func forward(ln net.Listener, backend string, dial func(network, addr string) (net.Conn, error)) *proxy {
	p := &proxy{addr: ln.Addr().String(), backend: backend, dial: dial, conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	return p
}

// Addr is the proxy's host:port.
func (p *proxy) Addr() string { return p.addr }

func (p *proxy) serve(ln net.Listener) {
	p.ln = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *proxy) forward(client net.Conn) {
	backend, err := p.dial("tcp", p.backend)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(client, backend) {
		client.Close()
		backend.Close()
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.pipe(backend, client); done <- struct{}{} }()
	go func() { p.pipe(client, backend); done <- struct{}{} }()
	<-done
	client.Close()
	backend.Close()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, backend)
	p.mu.Unlock()
}

func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// SetUp restores (true) or cuts (false) the proxy.
func (p *proxy) SetUp(up bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if up {
		if p.ln != nil {
			return nil
		}
		ln, err := net.Listen("tcp", p.addr)
		if err != nil {
			return err
		}
		p.serve(ln)
		return nil
	}
	if p.ln == nil {
		return nil
	}
	p.ln.Close()
	p.ln = nil
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	return nil
}

// SetLatency delays every chunk forwarded from now on, in both directions, by d; 0 removes the
// delay. Chunks are delayed, not held back one after another: the link keeps its throughput,
// as a distant one would.
func (p *proxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

// chunk is data read from one side, to be written to the other once due.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst until either fails. Without latency it writes what it reads at once;
// with latency it hands each chunk, stamped with when it is due, to a writer goroutine, so
// reading goes on meanwhile. It returns once the delayed chunks are written or dropped.
func (p *proxy) pipe(dst, src net.Conn) {
	delayed := make(chan chunk, 64)
	var pending atomic.Int64 // chunks handed over and not yet written
	done := make(chan struct{})
	go func() { writeDelayed(dst, src, delayed, &pending); close(done) }()
	defer func() { close(delayed); <-done }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			d := time.Duration(p.latency.Load())
			// Straight through only when nothing is still on its way: order is kept.
			if d == 0 && pending.Load() == 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			} else {
				pending.Add(1)
				delayed <- chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(d)}
			}
		}
		if err != nil {
			return
		}
	}
}

// writeDelayed writes each chunk of delayed to dst when it is due. After a failed write it
// closes both sides, which ends the reader, and drops the rest so the reader never blocks.
func writeDelayed(dst, src net.Conn, delayed <-chan chunk, pending *atomic.Int64) {
	failed := false
	for c := range delayed {
		if !failed {
			time.Sleep(time.Until(c.due))
			if _, err := dst.Write(c.data); err != nil {
				failed = true
				dst.Close()
				src.Close()
			}
		}
		pending.Add(-1)
	}
}

// Close cuts the proxy for good.
func (p *proxy) Close() { _ = p.SetUp(false) }
