package testbed

import (
	"io"
	"net"
	"net/url"
	"sync"
)

// proxy forwards TCP connections to an API server and can be cut to simulate an outage.
type proxy struct {
	addr    string
	backend string
	// dial connects to backend: a plain net.Dial, or a dial from another network namespace.
	dial func(network, addr string) (net.Conn, error)

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
	go func() { _, _ = io.Copy(backend, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, backend); done <- struct{}{} }()
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

// Close cuts the proxy for good.
func (p *proxy) Close() { _ = p.SetUp(false) }
