package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// syncBuffer is what the program writes, read as JSON lines by records.
type syncBuffer struct{ testenv.Buffer }

// records are the JSON lines written so far, with message msg; every line must be JSON.
func (s *syncBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// running is run in a goroutine, stopped by its context.
type running struct {
	stdout, stderr *syncBuffer
	cancel         context.CancelFunc
	code           chan int
}

// start runs the command line args in the test's process until stop or the end of the test.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{stdout: new(syncBuffer), stderr: new(syncBuffer), cancel: cancel, code: make(chan int, 1)}
	go func() {
		r.code <- run(ctx, args, r.stdout, r.stderr)
		close(r.code)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.code
	})
	return r
}

// stop cancels the run, as SIGTERM would, and checks that it returns 0 within 2 s.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.code:
		if code != 0 {
			t.Fatalf("exit code %d after stop, want 0; stderr:\n%s", code, r.stderr)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("still running 2 s after stop")
	}
}

func TestBadUsageExits2NamingTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{nil, "Usage: sample <command>"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"serve", "-nope"}, "-nope"},
		{[]string{"serve", "-listen", ""}, "-listen"},
		{[]string{"serve", "-listen", "8888"}, "-listen"},
		{[]string{"serve", "-listen", ":8888,,:8889"}, "-listen"},
		{[]string{"serve", "-listen", ":99999"}, "-listen"},
		{[]string{"serve", "-listen", ":8888,:8888"}, "-listen"},
		{[]string{"serve", "extra"}, `unexpected argument "extra"`},
		{[]string{"send"}, "-url is required"},
		{[]string{"send", "-url", "ftp://fluentd/"}, "-url"},
		{[]string{"send", "-url", "fluentd:8888"}, "-url"},
		{[]string{"send", "-url", "http:///path"}, "-url"},
		{[]string{"send", "-url", "http://127.0.0.1:1/", "-interval", "0"}, "-interval"},
		{[]string{"send", "-url", "http://127.0.0.1:1/", "-interval", "soon"}, "-interval"},
		{[]string{"send", "-url", "http://127.0.0.1:1/", "-timeout", "-1s"}, "-timeout"},
		{[]string{"send", "-url", "http://127.0.0.1:1/", "now"}, `unexpected argument "now"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.args, &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr does not say %q:\n%s", tc.want, stderr.String())
			}
			if !strings.Contains(stderr.String(), "Usage:") {
				t.Errorf("stderr has no usage:\n%s", stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout: %q, want nothing", stdout.String())
			}
		})
	}
}

func TestHelpPrintsUsageAndExits0(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-h"}, []string{"Usage: sample <command>", "serve", "send"}},
		{[]string{"help"}, []string{"Usage: sample <command>"}},
		{[]string{"serve", "-h"}, []string{"Usage: sample serve", "-listen", "/healthz"}},
		{[]string{"send", "-h"}, []string{"Usage: sample send", "-url", "-interval", "-timeout", "X-Sample-From"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tc.args, &stdout, &stderr); code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("usage lacks %q:\n%s", w, stdout.String())
				}
			}
			if stderr.Len() > 0 {
				t.Errorf("stderr: %q, want nothing", stderr.String())
			}
		})
	}
}
