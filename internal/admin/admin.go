// Package admin serves a component's operational endpoints on one listener: /metrics,
// /healthz (the process is alive) and /readyz (every readiness check passes).
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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is the admin HTTP server.
type Server struct {
	gatherer prometheus.Gatherer

	mu     sync.Mutex
	checks map[string]func() error
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

// Handler returns the HTTP handler of the admin endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
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

// Listen opens the admin listener, so a bad address fails at start rather than in Serve.
func Listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("SEMAPHORE_ADMIN_ADDR: %w", err)
	}
	return l, nil
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
