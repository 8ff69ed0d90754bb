package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// startProxy runs the program on a socket in a temporary directory until the test ends, and
// returns the socket's path and what the program logged so far.
func startProxy(t *testing.T) (socket string, logged func() string) {
	t.Helper()
	socket = filepath.Join(t.TempDir(), "egress.sock")
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu  sync.Mutex
		out bytes.Buffer
	)
	w := writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return out.Write(b)
	})
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"-socket", socket}, w) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
		case <-time.After(10 * time.Second):
			t.Error("the proxy did not stop within 10s")
		}
		if _, err := os.Stat(socket); err == nil {
			t.Errorf("the socket %s is still there after the proxy stopped", socket)
		}
	})
	logged = func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if strings.Contains(logged(), "listening on") {
			return socket, logged
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy did not listen within 5s; it logged %q", logged())
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// connect sends req on a new connection to socket and returns the connection and the response.
func connect(t *testing.T, socket, req string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	// As a response to a CONNECT: a 200 has no body, the tunnel follows.
	method, _, _ := strings.Cut(req, " ")
	res, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	return c, br, res
}

func TestConnectSplicesBothWays(t *testing.T) {
	socket, _ := startProxy(t)
	// The target: answers every line with "echo: <line>", then says bye when the client is done.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		s := bufio.NewScanner(c)
		for s.Scan() {
			fmt.Fprintf(c, "echo: %s\n", s.Text())
		}
		fmt.Fprint(c, "bye\n")
	}()

	// As kube-apiserver does it: the request, then (with TLS or HTTP) the client speaks first.
	c, br, res := connect(t, socket, "CONNECT "+ln.Addr().String()+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %s, want 200", res.Status)
	}
	// kube-apiserver refuses a proxy that sent anything past the response's header.
	if n := br.Buffered(); n != 0 {
		t.Fatalf("%d bytes after the response's header, want none", n)
	}
	for _, line := range []string{"hello", "world"} {
		if _, err := fmt.Fprintf(c, "%s\n", line); err != nil {
			t.Fatal(err)
		}
		got, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := "echo: " + line + "\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	// Closing our side for writing reaches the target, whose last words and end reach us.
	if err := c.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if string(rest) != "bye\n" {
		t.Errorf("after closing: got %q, want %q and the end", rest, "bye\n")
	}
}

func TestConnectRefused(t *testing.T) {
	socket, logged := startProxy(t)
	// A port nothing listens on (any more).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	_, br, res := connect(t, socket, "CONNECT "+addr+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	defer res.Body.Close()
	if res.StatusCode != http.StatusBadGateway {
		t.Errorf("CONNECT to a closed port: %s, want 502", res.Status)
	}
	body, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(body), "refused") {
		t.Errorf("body %q does not say the dial was refused", body)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the error: %v, want the connection closed (EOF)", err)
	}
	if !strings.Contains(logged(), "CONNECT "+addr) {
		t.Errorf("the failure is not logged: %q", logged())
	}
}

func TestOnlyConnect(t *testing.T) {
	socket, _ := startProxy(t)
	_, _, res := connect(t, socket, "GET http://127.0.0.1/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	defer res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %s, want 405", res.Status)
	}
}

func TestUsage(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), nil, &out); code != 2 {
		t.Errorf("no -socket: exit code %d, want 2 (%s)", code, out.String())
	}
}
