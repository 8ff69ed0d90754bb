// Package cmdtest runs the lab's programs in their own tests.
package cmdtest

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/kube-semaphore/semaphore/internal/harness/testenv"
)

// Build builds the lab's program name (lab/cmd/<name>) as the lab's image has it: static.
func Build(t testing.TB, name string) string {
	t.Helper()
	return testenv.BuildBinary(t, "github.com/kube-semaphore/semaphore/lab/cmd/"+name)
}

// Start starts cmd and returns a channel that receives how it exited, then is closed, so that
// a receive after the test's own returns at once. The process is killed and reaped when the
// test ends, if it still runs.
func Start(t testing.TB, cmd *exec.Cmd) <-chan error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return done
}

// CheckStatic checks that the ELF binary bin is linked statically, as the lab's images need:
// no program interpreter, no shared library.
func CheckStatic(t testing.TB, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a program interpreter: it is dynamically linked")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
}

// SignalExitsZero sends sig to cmd, started by Start with exited its channel, and checks that
// it exits with status 0 within the given time; output (what it printed) is shown on failure.
func SignalExitsZero(t testing.TB, cmd *exec.Cmd, exited <-chan error, sig os.Signal, within time.Duration, output fmt.Stringer) {
	t.Helper()
	start := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("after %v: %v, want exit status 0; output:\n%s", sig, err, output)
		}
		t.Logf("exited 0 %v after %v", time.Since(start).Round(time.Millisecond), sig)
	case <-time.After(within):
		t.Fatalf("still running %v after %v; output:\n%s", within, sig, output)
	}
}
