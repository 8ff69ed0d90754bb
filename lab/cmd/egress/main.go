// Command egress is the lab's egress proxy: how its API servers, which run on this machine's
// loopback, reach the nodes and pods, which live in network namespaces. It is what
// kube-apiserver's egress selector (--egress-selector-config-file, the `cluster` selection with
// proxyProtocol HTTPConnect over a uds transport) expects at the other end of a Unix socket:
//
//	egress -socket PATH
//
// The lab runs one per cluster inside its provider's router (ip netns exec), where the
// cluster's nodes' and pods' addresses route. It listens on the Unix socket PATH (which it creates, and
// removes when it stops) and answers every connection's first request, which must be
// "CONNECT host:port", by dialing host:port over TCP from where it runs: on success with
// "200 Connection established", after which it copies bytes both ways until both sides are
// done; on failure with 502 Bad Gateway and the error, or 405 for any other method, and closes
// the connection. kube-apiserver opens one connection per dial, so one connection carries
// one tunnel.
//
// It logs a line when it listens, one per failed request, and one when it stops; it exits 0
// on SIGTERM or SIGINT, 2 on a bad command line and 1 when it cannot listen.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// dialTimeout bounds a CONNECT's dial: an address on the nodes' network that nothing answers
// (a node that is gone) fails as it would in a real cluster, not after the kernel's minutes.
const dialTimeout = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// run runs the command line args until ctx is done and returns the exit code.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("egress", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "", "the Unix `socket` to listen on (required)")
	if err := fs.Parse(args); err != nil || *socket == "" || fs.NArg() > 0 {
		if err == nil {
			fmt.Fprintln(stderr, "usage: egress -socket PATH")
		}
		return 2
	}
	logger := log.New(stderr, "egress: ", log.LstdFlags)
	// A socket left by a proxy that was killed would fail the listen.
	_ = os.Remove(*socket)
	ln, err := net.Listen("unix", *socket)
	if err != nil {
		logger.Print(err)
		return 1
	}
	logger.Printf("listening on %s", *socket)
	p := &proxy{log: logger, dial: (&net.Dialer{Timeout: dialTimeout}).DialContext}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.serve(ln)
	}()
	<-ctx.Done()
	_ = ln.Close() // removes the socket file too
	<-done
	p.wait()
	logger.Printf("stopped")
	return 0
}

// proxy answers CONNECT requests on the connections it accepts.
type proxy struct {
	log  *log.Logger
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu    sync.Mutex
	conns map[net.Conn]bool // the open connections, both sides of every tunnel
	wg    sync.WaitGroup
}

// serve accepts connections on ln until it is closed.
func (p *proxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.log.Print(err)
			}
			return
		}
		p.wg.Go(func() { p.handle(c) })
	}
}

// wait closes every open connection and waits for their handlers.
func (p *proxy) wait() {
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track records c as open until the returned function is called.
func (p *proxy) track(c net.Conn) (untrack func()) {
	p.mu.Lock()
	if p.conns == nil {
		p.conns = map[net.Conn]bool{}
	}
	p.conns[c] = true
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		_ = c.Close()
	}
}

// handle serves one connection: its CONNECT request, then the tunnel.
func (p *proxy) handle(c net.Conn) {
	defer p.track(c)()
	_ = c.SetReadDeadline(time.Now().Add(dialTimeout))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		p.log.Printf("reading the request: %v", err)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if req.Method != http.MethodConnect {
		p.log.Printf("%s %s: only CONNECT is served", req.Method, req.RequestURI)
		reply(c, http.StatusMethodNotAllowed, "only CONNECT is served")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	upstream, err := p.dial(ctx, "tcp", req.Host)
	cancel()
	if err != nil {
		p.log.Printf("CONNECT %s: %v", req.Host, err)
		reply(c, http.StatusBadGateway, err.Error())
		return
	}
	defer p.track(upstream)()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	var wg sync.WaitGroup
	// Whatever the client sent after the request already is in br.
	wg.Go(func() { splice(upstream, br) })
	splice(c, upstream)
	wg.Wait()
}

// splice copies from src to dst until src ends, then closes dst for writing, so that the
// other side sees the end too.
func splice(dst net.Conn, src io.Reader) {
	_, _ = io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		_ = dst.Close()
	}
}

// reply writes an HTTP error response with msg as its body.
func reply(w io.Writer, code int, msg string) {
	body := msg + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}
