package admin_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kube-semaphore/semaphore/internal/daemon/admin"
)

func get(t *testing.T, h http.Handler, method, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Code, rec.Body.String()
}

func TestHealthz(t *testing.T) {
	s := admin.New(prometheus.NewRegistry())
	// A failing readiness check does not make the process unhealthy.
	s.AddReadyCheck("remote:aws", func() error { return errors.New("down") })
	code, body := get(t, s.Handler(), http.MethodGet, "/healthz")
	if code != http.StatusOK {
		t.Errorf("GET /healthz = %d, want 200", code)
	}
	if diff := cmp.Diff("ok\n", body); diff != "" {
		t.Errorf("GET /healthz body mismatch (-want +got):\n%s", diff)
	}
}

func TestReadyz(t *testing.T) {
	ok := func() error { return nil }
	tests := []struct {
		name     string
		checks   map[string]func() error
		wantCode int
		wantBody string
	}{
		{
			name:     "no checks",
			wantCode: http.StatusOK,
			wantBody: "readyz check passed\n",
		},
		{
			name:     "all pass",
			checks:   map[string]func() error{"remote:aws": ok, "informers": ok, "remote:merit": ok},
			wantCode: http.StatusOK,
			wantBody: "[+]informers ok\n[+]remote:aws ok\n[+]remote:merit ok\nreadyz check passed\n",
		},
		{
			name: "one fails",
			checks: map[string]func() error{
				"informers":    ok,
				"remote:aws":   func() error { return errors.New("unreachable: connection refused") },
				"remote:merit": ok,
			},
			wantCode: http.StatusServiceUnavailable,
			wantBody: "[+]informers ok\n[-]remote:aws failed: unreachable: connection refused\n[+]remote:merit ok\nreadyz check failed\n",
		},
		{
			name: "all fail",
			checks: map[string]func() error{
				"informers":  func() error { return errors.New("caches not synced yet") },
				"remote:aws": func() error { return errors.New("not probed yet") },
			},
			wantCode: http.StatusServiceUnavailable,
			wantBody: "[-]informers failed: caches not synced yet\n[-]remote:aws failed: not probed yet\nreadyz check failed\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := admin.New(prometheus.NewRegistry())
			for n, c := range tt.checks {
				s.AddReadyCheck(n, c)
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if rec.Code != tt.wantCode {
				t.Errorf("GET /readyz = %d, want %d", rec.Code, tt.wantCode)
			}
			if diff := cmp.Diff(tt.wantBody, rec.Body.String()); diff != "" {
				t.Errorf("GET /readyz body mismatch (-want +got):\n%s", diff)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("Content-Type = %q, want text/plain", ct)
			}
		})
	}
}

func TestReadyzRecovers(t *testing.T) {
	s := admin.New(prometheus.NewRegistry())
	err := errors.New("down")
	s.AddReadyCheck("remote:aws", func() error { return err })
	if code, _ := get(t, s.Handler(), http.MethodGet, "/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("GET /readyz with a failing check = %d, want 503", code)
	}
	err = nil
	if code, _ := get(t, s.Handler(), http.MethodGet, "/readyz"); code != http.StatusOK {
		t.Errorf("GET /readyz once the check passes = %d, want 200 (checks must run on every request)", code)
	}
	// Re-adding a check under the same name replaces it.
	s.AddReadyCheck("remote:aws", func() error { return errors.New("again") })
	if code, body := get(t, s.Handler(), http.MethodGet, "/readyz"); code != http.StatusServiceUnavailable || strings.Count(body, "remote:aws") != 1 {
		t.Errorf("GET /readyz after replacing the check = %d %q, want 503 naming remote:aws once", code, body)
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "semaphore_test_things_total", Help: "Things."}, []string{"remote"})
	reg.MustRegister(c)
	c.WithLabelValues("aws").Add(3)

	code, body := get(t, admin.New(reg).Handler(), http.MethodGet, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics = %d, want 200", code)
	}
	for _, want := range []string{
		"# HELP semaphore_test_things_total Things.",
		"# TYPE semaphore_test_things_total counter",
		`semaphore_test_things_total{remote="aws"} 3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("GET /metrics does not contain %q:\n%s", want, body)
		}
	}
}

func TestOnlyGET(t *testing.T) {
	h := admin.New(prometheus.NewRegistry()).Handler()
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, _ := get(t, h, http.MethodPost, path); code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s = %d, want 405", path, code)
		}
	}
	if code, _ := get(t, h, http.MethodGet, "/nope"); code != http.StatusNotFound {
		t.Errorf("GET /nope = %d, want 404", code)
	}
}

func TestServe(t *testing.T) {
	l, err := admin.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- admin.New(prometheus.NewRegistry()).Serve(ctx, l) }()

	resp, err := http.Get("http://" + l.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
		t.Errorf("GET /healthz = %d %q, want 200 \"ok\\n\"", resp.StatusCode, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve() after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve() did not return after its context was cancelled")
	}
}

func TestListenBadAddress(t *testing.T) {
	_, err := admin.Listen("not an address")
	if err == nil || !strings.HasPrefix(err.Error(), "SEMAPHORE_ADMIN_ADDR: ") {
		t.Errorf("Listen(bad) = %v, want an error starting with SEMAPHORE_ADMIN_ADDR", err)
	}
}

// On the host network an agent and its surged successor listen on the same admin port until
// the old one stops.
func TestListenSharesTheAddressWithAnotherAdminListener(t *testing.T) {
	first, err := admin.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := admin.Listen(first.Addr().String())
	if err != nil {
		t.Fatalf("a second admin listener on %s: %v", first.Addr(), err)
	}
	second.Close()
}

// A predecessor whose socket does not share the address (an older release) holds it: Listen
// says so, and ListenWhenFree listens as soon as the predecessor lets go.
func TestListenWhenFreeWaitsForAHolderThatDoesNotShare(t *testing.T) {
	holder, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := holder.Addr().String()
	if _, err := admin.Listen(addr); !errors.Is(err, admin.ErrInUse) {
		t.Fatalf("Listen(%s held) = %v, want ErrInUse", addr, err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := admin.ListenWhenFree(context.Background(), addr, time.Minute)
		if err == nil {
			l.Close()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("ListenWhenFree returned %v while the address was held", err)
	case <-time.After(300 * time.Millisecond):
	}
	holder.Close()
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("ListenWhenFree after the holder let go: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ListenWhenFree did not listen within 10s of the address being free")
	}
}

// Waiting has an end: a holder that never lets go is an error naming the variable.
func TestListenWhenFreeGivesUpAfterItsWait(t *testing.T) {
	holder, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	_, err = admin.ListenWhenFree(context.Background(), holder.Addr().String(), 200*time.Millisecond)
	if !errors.Is(err, admin.ErrInUse) || !strings.HasPrefix(err.Error(), "SEMAPHORE_ADMIN_ADDR") {
		t.Errorf("ListenWhenFree(held for good) = %v, want ErrInUse naming SEMAPHORE_ADMIN_ADDR", err)
	}
}
