package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// requestLog records the requests a test server gets.
type requestLog struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (l *requestLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r)
}

func (l *requestLog) all() []*http.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*http.Request(nil), l.reqs...)
}

func TestSendGetsTheURLWithFromHeaderEveryIntervalAndLogsStatus(t *testing.T) {
	t.Setenv("POD_NAME", "forwarder-0")
	var got requestLog
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.add(r)
		w.Write([]byte("served by fluentd-0\n"))
	}))
	defer srv.Close()
	url := srv.URL + "/logs"

	r := start(t, "send", "-url", url, "-interval", "30ms")
	waitFor(t, "3 requests", func() bool { return len(r.stdout.records(t, "sent")) >= 3 })
	r.stop(t)

	reqs := got.all()
	addrs := map[string]bool{}
	for _, req := range reqs {
		if req.Method != http.MethodGet || req.URL.Path != "/logs" || req.Header.Get(fromHeader) != "forwarder-0" {
			t.Errorf("server got %s %s with %s %q, want GET /logs with forwarder-0", req.Method, req.URL.Path, fromHeader, req.Header.Get(fromHeader))
		}
		addrs[req.RemoteAddr] = true
	}
	if len(addrs) != len(reqs) {
		t.Errorf("%d requests over %d connections: each attempt must connect afresh", len(reqs), len(addrs))
	}
	sent := r.stdout.records(t, "sent")
	// The last request may have been cut short by the stop, and not logged.
	if len(reqs) < len(sent) || len(reqs) > len(sent)+1 {
		t.Errorf("%d sent lines for %d requests:\n%s", len(sent), len(reqs), r.stdout)
	}
	for _, rec := range sent {
		if rec["url"] != url || rec["status"] != float64(200) || rec["reply"] != "served by fluentd-0" || rec["err"] != nil {
			t.Errorf("logged %v, want url %s, status 200, no err", rec, url)
		}
		if _, err := time.ParseDuration(rec["duration"].(string)); err != nil {
			t.Errorf("duration: %v", err)
		}
	}
}

func TestSendLogsFailuresAndKeepsGoing(t *testing.T) {
	// A loopback port nothing listens on: connections are refused until it does.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url := "http://" + addr + "/"

	r := start(t, "send", "-url", url, "-interval", "20ms")
	failed := func() []map[string]any {
		var out []map[string]any
		for _, rec := range r.stdout.records(t, "sent") {
			if rec["err"] != nil {
				out = append(out, rec)
			}
		}
		return out
	}
	waitFor(t, "2 failed attempts", func() bool { return len(failed()) >= 2 })
	for _, rec := range failed() {
		if rec["url"] != url || !strings.Contains(rec["err"].(string), "refused") || rec["status"] != nil || rec["level"] != "WARN" {
			t.Errorf("logged %v, want a WARN with url %s, a refused connection, no status", rec, url)
		}
	}

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	waitFor(t, "an attempt to succeed", func() bool {
		recs := r.stdout.records(t, "sent")
		return recs[len(recs)-1]["status"] == float64(200)
	})
	r.stop(t)
}

func TestSendGivesUpOnARequestAfterTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	r := start(t, "send", "-url", srv.URL, "-interval", "50ms", "-timeout", "100ms")
	waitFor(t, "2 attempts", func() bool { return len(r.stdout.records(t, "sent")) >= 2 })
	r.stop(t)
	for _, rec := range r.stdout.records(t, "sent") {
		d, _ := time.ParseDuration(rec["duration"].(string))
		if rec["err"] == nil || d < 100*time.Millisecond || d > 2*time.Second {
			t.Errorf("logged %v, want an err after about 100ms", rec)
		}
	}
}
