package env

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The lab directory: a lab takes it with its pid file, and keeps its runtime state there as
// long as it runs (the binaries and the logs stay).

// pidFile holds the pid of the lab that runs in the directory.
const pidFile = "lab.pid"

func readPID(dir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(dir, pidFile), err)
	}
	return pid, nil
}

// Running returns the pid and run record of the lab that runs in dir. ok is false when none
// does; rec is then the record a lab that died left behind, if any.
func Running(dir string) (pid int, rec *Record, ok bool, err error) {
	rec, err = loadRecord(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, nil, false, err
	}
	pid, err = readPID(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, rec, false, nil
	}
	if err != nil {
		return 0, rec, false, err
	}
	return pid, rec, labProcess(pid, rec).alive(), nil
}

// labProcess is the lab process pid, whose start time rec has when it is its record.
func labProcess(pid int, rec *Record) Process {
	p := Process{PID: pid}
	if rec != nil && rec.PID == pid {
		p.Start = rec.PIDStart
	}
	return p
}

// acquire makes dir the directory of a new lab: it refuses when a lab runs there, cleans up
// after one that died, and creates the pid file.
func acquire(dir string, out io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pid, rec, ok, err := Running(dir)
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("a lab is already running in %s (pid %d): `bash ci/lab status` shows it, `make lab-down` (bash ci/lab down) stops it", dir, pid)
	}
	if pid != 0 || rec != nil {
		fmt.Fprintf(out, "lab: cleaning up after a lab that did not tear down (pid %d)\n", pid)
		if err := cleanUp(dir, rec, out); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, pidFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("another lab is starting in %s", dir)
		}
		return err
	}
	_, err = fmt.Fprintln(f, os.Getpid())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// runtimePaths are what only a running lab needs, in its directory. The binaries and the logs
// are not among them: they stay.
var runtimePaths = append([]string{KubeconfigFile, workstationKubeconfig, guideDir, "clusters", "coredns", "nodes", "pods", "prometheus", "tmp", recordFile, recordFile + ".tmp", pidFile}, egressSockets()...)

// egressSockets are the egress proxies' sockets, one per cluster.
func egressSockets() []string {
	var out []string
	for _, name := range ClusterNames() {
		out = append(out, egressSocket(name))
	}
	return out
}

// removeRuntimeState removes the runtime paths.
func removeRuntimeState(dir string) error {
	var errs []error
	for _, p := range runtimePaths {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, p)))
	}
	return errors.Join(errs...)
}
