//go:build unix

package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/lab/cmd/internal/cmdtest"
)

func TestBuildsStaticWithoutCgo(t *testing.T) {
	bin := cmdtest.Build(t, "sample")
	if runtime.GOOS != "linux" {
		t.Skip("checks an ELF binary")
	}
	cmdtest.CheckStatic(t, bin)
}

// startBinary starts the built program with args and waits until its stdout has a line
// with message ready.
func startBinary(t *testing.T, ready string, args ...string) (*exec.Cmd, *syncBuffer, <-chan error) {
	t.Helper()
	cmd := exec.Command(cmdtest.Build(t, "sample"), args...)
	stdout, stderr := new(syncBuffer), new(syncBuffer)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	done := cmdtest.Start(t, cmd)
	waitFor(t, "the program to start", func() bool {
		return strings.Contains(stdout.String(), `"msg":"`+ready+`"`) || strings.Contains(stderr.String(), "sample")
	})
	return cmd, stdout, done
}

// signalAndWait sends sig and checks that the program exits 0 within 2 s.
func signalAndWait(t *testing.T, cmd *exec.Cmd, done <-chan error, sig syscall.Signal, stdout *syncBuffer) {
	t.Helper()
	cmdtest.SignalExitsZero(t, cmd, done, sig, 2*time.Second, stdout)
	if len(stdout.records(t, "stopping")) != 1 {
		t.Errorf("no stopping line:\n%s", stdout)
	}
}

func TestBinaryExitsZeroPromptlyOnSignal(t *testing.T) {
	for name, sig := range map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT} {
		t.Run("serve/"+name, func(t *testing.T) {
			cmd, stdout, done := startBinary(t, "listening", "serve", "-listen", "127.0.0.1:0")
			addr := stdout.records(t, "listening")[0]["addr"].(string)
			// An idle keep-alive connection, and one that has sent nothing yet: neither holds
			// the stop up.
			c := clientFrom("127.0.0.1")
			get(t, c, "GET", "http://"+addr+"/", nil, "served by")
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			signalAndWait(t, cmd, done, sig, stdout)
		})
		t.Run("send/"+name, func(t *testing.T) {
			// A request in flight, that would take a minute: the stop does not wait for it.
			got := make(chan struct{}, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case got <- struct{}{}:
				default:
				}
				<-r.Context().Done()
			}))
			defer srv.Close()
			cmd, stdout, done := startBinary(t, "sending", "send", "-url", srv.URL, "-timeout", "1m", "-interval", "1h")
			select {
			case <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("no request")
			}
			signalAndWait(t, cmd, done, sig, stdout)
		})
	}
}
