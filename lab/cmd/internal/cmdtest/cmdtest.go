// Package cmdtest runs the lab's programs in their own tests.
package cmdtest

import (
	"os/exec"
	"testing"
)

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
