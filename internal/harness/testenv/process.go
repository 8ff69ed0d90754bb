package testenv

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testbed"
)

// BuildBinary builds the command pkg (an import path) into a temporary directory, statically
// (CGO_ENABLED=0), as the images have it. It skips the test under -short.
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	SkipIfShort(t, "to build "+pkg)
	bin, err := testbed.BuildBinary(pkg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Run is how a binary run by RunBinary ended.
type Run struct {
	Code           int
	Stdout, Stderr string
}

// RunBinary runs bin with args and exactly the environment env plus PATH and HOME, as a
// container would get it, and fails the test if it does not exit within 30 s.
func RunBinary(t testing.TB, bin string, env []string, args ...string) Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s did not exit within 30s; stderr:\n%s", bin, stderr.String())
	}
	r := Run{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// PeakRSS reads the high-water mark of a running process's resident memory (VmHWM), in bytes.
func PeakRSS(t testing.TB, pid int) float64 {
	t.Helper()
	rss, err := testbed.PeakRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	return rss
}

// ExpectConfigError fails the test unless r is how a component refuses bad configuration: a
// non-zero exit and exactly one line on stderr, naming every string in want, without a crash.
func ExpectConfigError(t testing.TB, r Run, want ...string) {
	t.Helper()
	if r.Code == 0 {
		t.Errorf("exit code 0, want non-zero")
	}
	lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
	if len(lines) != 1 || lines[0] == "" {
		t.Fatalf("stderr has %d lines, want exactly one:\n%s", len(lines), r.Stderr)
	}
	for _, w := range want {
		if !strings.Contains(lines[0], w) {
			t.Errorf("stderr %q does not name %q", lines[0], w)
		}
	}
	if strings.Contains(r.Stderr, "panic") || strings.Contains(r.Stderr, "goroutine ") {
		t.Errorf("stderr looks like a crash: %s", r.Stderr)
	}
}

// Background is a function running in a goroutine until Stop or the end of the test.
type Background struct {
	cancel context.CancelFunc
	done   chan error
	err    error
}

// RunInBackground calls run in a goroutine with a context that Stop (or the test's end)
// cancels.
func RunInBackground(t testing.TB, run func(context.Context) error) *Background {
	ctx, cancel := context.WithCancel(context.Background())
	b := &Background{cancel: cancel, done: make(chan error, 1)}
	go func() { b.done <- run(ctx) }()
	t.Cleanup(func() { _ = b.Stop() })
	return b
}

// Stop cancels the run and waits for it to return; it returns run's error, also when called
// again.
func (b *Background) Stop() error {
	if b.cancel != nil {
		b.cancel()
		b.cancel = nil
		b.err = <-b.done
	}
	return b.err
}

// Readyz GETs http://addr/readyz and returns the status code and body.
func Readyz(t testing.TB, addr string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
