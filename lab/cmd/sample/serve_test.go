package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// startServe runs "sample serve" on n loopback ports chosen by the system and returns them
// once it listens.
func startServe(t *testing.T, n int) (*running, []int) {
	t.Helper()
	r := start(t, "serve", "-listen", strings.TrimSuffix(strings.Repeat("127.0.0.1:0,", n), ","))
	waitFor(t, "serve to listen", func() bool { return len(r.stdout.records(t, "listening")) == n })
	var ports []int
	for _, rec := range r.stdout.records(t, "listening") {
		_, port, err := net.SplitHostPort(rec["addr"].(string))
		if err != nil {
			t.Fatal(err)
		}
		var p int
		if _, err := fmt.Sscan(port, &p); err != nil {
			t.Fatal(err)
		}
		ports = append(ports, p)
	}
	return r, ports
}

// get sends a request with the client and checks the answer is 200 with want in its body.
func get(t *testing.T, c *http.Client, method, url string, header map[string]string, want string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		t.Fatalf("%s %s: %s %q, want 200 with %q", method, url, resp.Status, body, want)
	}
}

// clientFrom is an HTTP client whose connections come from the loopback address ip.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{
		Proxy:       nil,
		DialContext: d.DialContext,
	}}
}

func TestServeLogsOneLinePerRequestWithClientAddressListenPortAndFrom(t *testing.T) {
	t.Setenv("POD_NAME", "fluentd-0")
	r, ports := startServe(t, 2)
	// From another address than the listener's, on Linux where all of 127/8 is loopback:
	// client is where the connection comes from.
	clientIP := "127.0.0.1"
	if runtime.GOOS == "linux" {
		clientIP = "127.0.0.2"
	}
	c := clientFrom(clientIP)

	type want struct {
		listen             int
		method, path, from string
	}
	var wants []want
	for i, port := range ports {
		from := fmt.Sprintf("forwarder-%d", i)
		// A header claiming another client changes nothing: client is the connection's.
		get(t, c, "GET", fmt.Sprintf("http://127.0.0.1:%d/logs/%d?x=1", port, i), map[string]string{
			fromHeader: from, "X-Forwarded-For": "203.0.113.9", "X-Real-Ip": "203.0.113.9",
		}, "served by fluentd-0")
		wants = append(wants, want{port, "GET", fmt.Sprintf("/logs/%d", i), from})
	}
	get(t, c, "POST", fmt.Sprintf("http://127.0.0.1:%d/", ports[0]), nil, "served by fluentd-0")
	wants = append(wants, want{ports[0], "POST", "/", ""})

	recs := r.stdout.records(t, "request")
	if len(recs) != len(wants) {
		t.Fatalf("%d request lines for %d requests:\n%s", len(recs), len(wants), r.stdout)
	}
	for i, w := range wants {
		got := recs[i]
		if got["listen"] != float64(w.listen) || got["client"] != clientIP || got["method"] != w.method || got["path"] != w.path || got["from"] != w.from {
			t.Errorf("request %d logged %v, want listen %d client %s method %s path %s from %q",
				i, got, w.listen, clientIP, w.method, w.path, w.from)
		}
	}
	r.stop(t)
}

func TestServeReadsABodyWholeAndSaysHowManyBytesItReceived(t *testing.T) {
	t.Setenv("POD_NAME", "echo-0")
	r, ports := startServe(t, 1)
	body := strings.Repeat("x", 64<<10)
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/", ports[0]), "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(resp.Body)
	if want := "served by echo-0, received 65536 bytes\n"; resp.StatusCode != http.StatusOK || string(reply) != want {
		t.Fatalf("POST of 64 KiB: %s %q, want 200 %q", resp.Status, reply, want)
	}
	recs := r.stdout.records(t, "request")
	if len(recs) != 1 || recs[0]["body_bytes"] != float64(len(body)) {
		t.Fatalf("logged %v, want one request with body_bytes %d", recs, len(body))
	}
	r.stop(t)
}

func TestServeAnswersHealthzWithoutLoggingIt(t *testing.T) {
	r, ports := startServe(t, 1)
	url := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	c := clientFrom("127.0.0.1")
	for range 3 {
		get(t, c, "GET", url+"/healthz", nil, "ok")
	}
	// Lines are written before the answer: none can come late.
	if recs := r.stdout.records(t, "request"); len(recs) != 0 {
		t.Fatalf("/healthz was logged:\n%s", r.stdout)
	}
	get(t, c, "GET", url+"/healthz/not", nil, "served by")
	if recs := r.stdout.records(t, "request"); len(recs) != 1 || recs[0]["path"] != "/healthz/not" {
		t.Fatalf("want one line, for /healthz/not:\n%s", r.stdout)
	}
	r.stop(t)
}

func TestServeFailsWhenAnAddressIsInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"serve", "-listen", "127.0.0.1:0," + busy.Addr().String()}, &stdout, &stderr)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), busy.Addr().String()) {
		t.Errorf("stderr does not name %s: %q", busy.Addr(), stderr.String())
	}
}

func TestClientIP(t *testing.T) {
	for in, want := range map[string]string{
		"198.18.3.10:40000":          "198.18.3.10",
		"[::ffff:198.18.3.10]:40000": "198.18.3.10",
		"[fd00::1]:40000":            "fd00::1",
		"[fe80::1%eth0]:40000":       "fe80::1%eth0",
		"@":                          "@",
	} {
		if got := clientIP(in); got != want {
			t.Errorf("clientIP(%q) = %q, want %q", in, got, want)
		}
	}
}
