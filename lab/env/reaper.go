package env

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/kube-semaphore/semaphore/lab/layout"
)

// ReaperCommand is the hidden command of the reaper, a process the lab starts so that it is
// cleaned up after even when it is killed hard. The lab's own children get a parent-death
// signal, but envtest starts kube-apiserver and etcd in their own process groups without one;
// the reaper stops them when the lab has gone without tearing down.
const ReaperCommand = "_reap"

func (l *Lab) startReaper() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	c, err := l.startChild("reaper", exe, []string{"-dir", l.dir, ReaperCommand, strconv.Itoa(os.Getpid())}, nil, l.Path("logs", "lab-reaper.log"), true)
	if err != nil {
		return err
	}
	// Registered first, so stopped last: until then it would clean up after a lab killed in
	// the middle of its teardown.
	l.onTeardown(func() { c.stop(syscall.SIGKILL, time.Second) })
	return nil
}

// Reap waits for the lab (args[0] is its pid) to go, then cleans up after it in dir: with a
// lab that tore down there is nothing left to do. It returns the command's exit code.
func Reap(dir string, args []string) int {
	if len(args) != 1 {
		return 2
	}
	labPID, err := strconv.Atoi(args[0])
	if err != nil {
		return 2
	}
	for os.Getppid() == labPID {
		time.Sleep(500 * time.Millisecond)
	}
	rec, _ := layout.LoadRecord(dir)
	if rec != nil && rec.PID != labPID {
		return 0 // another lab runs there now
	}
	if pid, err := layout.ReadPID(dir); err == nil && pid != labPID {
		return 0
	}
	if err := cleanUp(dir, rec, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "lab reaper: %v\n", err)
		return 1
	}
	return 0
}
