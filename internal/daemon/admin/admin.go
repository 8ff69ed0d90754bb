// Package admin serves a component's operational endpoints on one listener: /metrics,
// /healthz (the process is alive), /readyz (every readiness check passes) and those a component
// adds (Handle).
package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"
)

// Server is the admin HTTP server.
type Server struct {
	gatherer prometheus.Gatherer

	mu     sync.Mutex
	checks map[string]func() error
	// handlers are a component's own endpoints, by pattern.
	handlers map[string]http.Handler
}

// New returns a server exposing the metrics of gatherer.
func New(gatherer prometheus.Gatherer) *Server {
	return &Server{gatherer: gatherer, checks: map[string]func() error{}}
}

// AddReadyCheck adds a named check to /readyz. A check returns nil when it passes.
func (s *Server) AddReadyCheck(name string, check func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[name] = check
}

// Handle adds a component's own endpoint (an http.ServeMux pattern, "GET /gateway/{remote}").
// Add it before Serve.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handlers == nil {
		s.handlers = map[string]http.Handler{}
	}
	s.handlers[pattern] = h
}

// Handler returns the HTTP handler of the admin endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.mu.Lock()
	for pattern, h := range s.handlers {
		mux.Handle(pattern, h)
	}
	s.mu.Unlock()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	return mux
}

// readyz answers 200 when every check passes and 503 otherwise; the body lists each check, in
// the style of the Kubernetes API server's /readyz?verbose, so it says which remote is down.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	names := make([]string, 0, len(s.checks))
	for n := range s.checks {
		names = append(names, n)
	}
	checks := make(map[string]func() error, len(s.checks))
	for n, c := range s.checks {
		checks[n] = c
	}
	s.mu.Unlock()
	sort.Strings(names)

	var body strings.Builder
	failed := false
	for _, n := range names {
		if err := checks[n](); err != nil {
			failed = true
			fmt.Fprintf(&body, "[-]%s failed: %v\n", n, err)
		} else {
			fmt.Fprintf(&body, "[+]%s ok\n", n)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		w.WriteHeader(http.StatusServiceUnavailable)
		body.WriteString("readyz check failed\n")
	} else {
		body.WriteString("readyz check passed\n")
	}
	_, _ = w.Write([]byte(body.String()))
}

// Listen opens the admin listener, so a bad address fails at start rather than in Serve. The
// socket shares its address (SO_REUSEPORT): on the host network, the agent a rollout starts
// beside the one it replaces listens on the same port until the old one stops, and the
// kubelet's probes and the scrapes reach one or the other. An address in use by a socket that
// does not share it is ErrInUse.
func Listen(addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: reusePort}
	l, err := lc.Listen(context.Background(), "tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("SEMAPHORE_ADMIN_ADDR: %w: %w", ErrInUse, err)
	}
	if err != nil {
		return nil, fmt.Errorf("SEMAPHORE_ADMIN_ADDR: %w", err)
	}
	return l, nil
}

// ErrInUse is Listen's error when another socket holds the address and does not share it.
var ErrInUse = errors.New("address in use")

// ListenWhenFree is Listen that, while the address is in use, tries again until it is free,
// ctx is done or wait has passed: the time a predecessor that does not share the address (a
// release before SO_REUSEPORT) takes to stop once its successor stands by.
func ListenWhenFree(ctx context.Context, addr string, wait time.Duration) (net.Listener, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := Listen(addr)
		if !errors.Is(err, ErrInUse) || time.Now().After(deadline) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// reusePort sets SO_REUSEPORT on the socket before it binds.
func reusePort(_, _ string, c syscall.RawConn) error {
	var sockErr error
	if err := c.Control(func(fd uintptr) {
		sockErr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return sockErr
}

// Serve serves the admin endpoints on l until ctx is done.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
